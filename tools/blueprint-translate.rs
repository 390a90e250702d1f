//! `blueprint-translate`: imports Transformer specs into ModelIR and exports
//! work summaries as JSON. See `blueprint-translate --help`.

fn main() {
    std::process::exit(blueprint::tools::cli::run(blueprint::tools::translate::main_with_args));
}
