//! `blueprint-translate`: imports Transformer specs into ModelIR and exports
//! work summaries as JSON. See `blueprint-translate --help`.

fn main() {
    std::process::exit(blueprint::tool::run(blueprint::translate::main_with_args));
}
