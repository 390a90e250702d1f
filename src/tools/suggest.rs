//! Did-you-mean suggestions: the registered passes (Blueprint's and every
//! upstream one) and the nearest of a list of names to a misspelt one.

use crate::tools::registry as passes;

extern "C" {
    /// `src/tools/capi/opt.cpp`.
    fn blueprintIsRegisteredPass(argument: mlir_sys::MlirStringRef) -> bool;
    fn blueprintRegisteredPassNames(callback: mlir_sys::MlirStringCallback, user_data: *mut std::ffi::c_void);
}

/// Whether `name` is a registered upstream pass or pipeline.
pub fn is_registered_upstream_pass(name: &str) -> bool {
    crate::ir::context::register_upstream_passes();
    // SAFETY: a valid string reference for the call.
    unsafe { blueprintIsRegisteredPass(mlir_sys::MlirStringRef { data: name.as_ptr().cast(), length: name.len() }) }
}

/// Every pass name: Blueprint's and every registered upstream one.
#[must_use]
pub fn pass_names() -> Vec<String> {
    unsafe extern "C" fn collect(name: mlir_sys::MlirStringRef, user_data: *mut std::ffi::c_void) {
        // SAFETY: `user_data` is the vector below, the name valid during the call.
        let names = unsafe { &mut *user_data.cast::<Vec<String>>() };
        names.push(String::from_utf8_lossy(unsafe { crate::ir::raw::string_ref_bytes(name) }).into_owned());
    }
    crate::ir::context::register_upstream_passes();
    let mut names: Vec<String> = passes::PASSES.iter().map(|p| p.name.to_string()).collect();
    let mut upstream: Vec<String> = Vec::new();
    // SAFETY: the callback only pushes into `upstream`.
    unsafe { blueprintRegisteredPassNames(Some(collect), (&mut upstream as *mut Vec<String>).cast()) };
    names.extend(upstream);
    names.sort();
    names.dedup();
    names
}

/// The candidate nearest to `word` in edit distance, if near enough to
/// be what was meant (at most a third of the word's length, at least 2).
#[must_use]
pub fn suggest<S: AsRef<str>>(word: &str, candidates: &[S]) -> Option<String> {
    let limit = (word.chars().count() / 3).max(2);
    candidates
        .iter()
        .map(|c| (edit_distance(word, c.as_ref()), c.as_ref()))
        .filter(|(d, _)| *d <= limit)
        .min_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)))
        .map(|(_, c)| c.to_string())
}

/// Levenshtein distance over characters.
#[must_use]
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        current[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = previous[j] + usize::from(ca != *cb);
            current[j + 1] = substitute.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_names() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        let names = ["mlir-pass-statistics", "mlir-timing", "canonicalize"];
        assert_eq!(suggest("mlir-pass-statistic", &names).as_deref(), Some("mlir-pass-statistics"));
        assert_eq!(suggest("canonicalise", &names).as_deref(), Some("canonicalize"));
        assert_eq!(suggest("zzz", &names), None);
    }

    #[test]
    fn upstream_passes_are_listed() {
        let names = pass_names();
        assert!(names.iter().any(|n| n == "canonicalize"));
        assert!(names.iter().any(|n| n == "dist-async"));
        assert!(is_registered_upstream_pass("cse"));
        assert!(!is_registered_upstream_pass("no-such-pass"));
    }
}
