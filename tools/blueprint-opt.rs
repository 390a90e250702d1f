//! `blueprint-opt`: Blueprint's `mlir-opt`. See `blueprint-opt --help`.

fn main() {
    std::process::exit(blueprint::tools::cli::run(blueprint::tools::opt::main_with_args));
}
