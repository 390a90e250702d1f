//! `blueprint-run`: lowers, JIT-compiles and runs a `dist` program on
//! in-process ranks or under `mpirun`. See `blueprint-run --help`.

fn main() {
    std::process::exit(blueprint::tools::cli::run(blueprint::tools::run::main_with_args));
}
