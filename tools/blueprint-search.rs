//! `blueprint-search`: strategy search over Calculon's space with
//! Blueprint's estimate. See `blueprint-search --help`.

fn main() {
    std::process::exit(blueprint::tool::run(blueprint::search_cli::main_with_args));
}
