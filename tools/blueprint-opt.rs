//! `blueprint-opt`: Blueprint's `mlir-opt`. See `blueprint-opt --help`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(blueprint::opt::main_with_args(&args));
}
