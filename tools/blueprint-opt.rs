//! `blueprint-opt`: Blueprint's `mlir-opt`. See `blueprint-opt --help`.

fn main() {
    std::process::exit(blueprint::tool::run(blueprint::opt::main_with_args));
}
