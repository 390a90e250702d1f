//! `blueprint-translate`: imports Transformer specs into ModelIR and exports
//! work summaries as JSON. See `blueprint-translate --help`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(blueprint::translate::main_with_args(&args));
}
