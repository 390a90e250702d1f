//! `blueprint-search`: strategy search over Calculon's space with
//! Blueprint's estimate. See `blueprint-search --help`.

fn main() {
    std::process::exit(blueprint::tools::cli::run(blueprint::tools::search::main_with_args));
}
