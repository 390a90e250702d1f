//! Reading `.mlir` text into a module: the one parser every tool and test
//! uses, with a nesting limit checked before MLIR recurses into the input.

use melior::{
    ir::{block::BlockLike, operation::OperationLike, Location, Module},
    Context,
};

use crate::ir::{diagnostics::DiagnosticSink, input_limits};

/// Deepest bracket nesting (`(`, `[`, `{`, `<`) accepted in input IR.
/// MLIR's parser, verifier and printer recurse once per level, and stock
/// `mlir-opt` overflows its stack on inputs nested about 5,000 deep; 1,000
/// levels is far beyond any real program.
pub const MAX_NESTING_DEPTH: usize = 1000;

/// Line and column (1-based) where `source` first nests deeper than
/// [`MAX_NESTING_DEPTH`], skipping string literals and `//` comments.
#[must_use]
pub fn too_deep(source: &[u8]) -> Option<(usize, usize)> {
    // Every input is scanned: a fast pass without positions first, the
    // located one only for input that is too deep.
    if nests_too_deep(source) {
        locate_too_deep(source)
    } else {
        None
    }
}

/// Bytes that change the scanner's state; the rest are skipped at once.
const SPECIAL: [bool; 256] = {
    let mut table = [false; 256];
    let specials = *b"\"/([{<)]}>";
    let mut k = 0;
    while k < specials.len() {
        table[specials[k] as usize] = true;
        k += 1;
    }
    table
};

/// Whether [`locate_too_deep`] finds a position: the same scan without
/// line and column bookkeeping.
fn nests_too_deep(source: &[u8]) -> bool {
    let mut depth = 0usize;
    let mut i = 0;
    while i < source.len() {
        // Ordinary bytes (most of the input) in one tight loop.
        let Some(skip) = next_special(&source[i..]) else { return false };
        i += skip;
        match source[i] {
            b'"' => {
                // To the closing quote or the line's end, escapes skipping a byte.
                i += 1;
                loop {
                    match source.get(i..).and_then(|rest| rest.iter().position(|b| matches!(*b, b'"' | b'\n' | b'\\'))) {
                        Some(k) if source[i + k] == b'\\' => i += k + 2,
                        Some(k) => {
                            i += k;
                            break;
                        }
                        None => return false,
                    }
                }
            }
            b'/' if source.get(i + 1) == Some(&b'/') => {
                // A newline is an ordinary byte here: resume at it.
                match source[i..].iter().position(|b| *b == b'\n') {
                    Some(k) => i += k,
                    None => return false,
                }
                continue;
            }
            b'(' | b'[' | b'{' | b'<' => {
                depth += 1;
                if depth > MAX_NESTING_DEPTH {
                    return true;
                }
            }
            b'>' if i > 0 && source[i - 1] == b'-' => {}
            b'>' if source.get(i + 1) == Some(&b'=') => {}
            b')' | b']' | b'}' | b'>' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    false
}

/// Offset of the first [`SPECIAL`] byte of `bytes`: 16 bytes per step
/// with SSE2 (every x86-64 has it), as the input is mostly ordinary bytes.
fn next_special(bytes: &[u8]) -> Option<usize> {
    let mut offset = 0;
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8};
        const NEEDLES: [u8; 10] = *b"\"/([{<)]}>";
        while offset + 16 <= bytes.len() {
            // SAFETY: SSE2 is part of x86-64; the load reads bytes[offset..offset + 16].
            let mask = unsafe {
                let chunk = _mm_loadu_si128(bytes.as_ptr().add(offset).cast());
                let mut hits = _mm_cmpeq_epi8(chunk, _mm_set1_epi8(NEEDLES[0] as i8));
                for needle in &NEEDLES[1..] {
                    hits = _mm_or_si128(hits, _mm_cmpeq_epi8(chunk, _mm_set1_epi8(*needle as i8)));
                }
                _mm_movemask_epi8(hits)
            };
            if mask != 0 {
                return Some(offset + mask.trailing_zeros() as usize);
            }
            offset += 16;
        }
    }
    bytes[offset..].iter().position(|b| SPECIAL[usize::from(*b)]).map(|k| offset + k)
}

fn locate_too_deep(source: &[u8]) -> Option<(usize, usize)> {
    let (mut depth, mut line, mut column) = (0usize, 1usize, 0usize);
    let mut i = 0;
    while i < source.len() {
        let byte = source[i];
        column += 1;
        match byte {
            b'\n' => {
                line += 1;
                column = 0;
            }
            b'"' => {
                // A string literal, with backslash escapes, ends at the quote
                // (or the line, where the parser will complain).
                i += 1;
                while i < source.len() && source[i] != b'"' && source[i] != b'\n' {
                    i += if source[i] == b'\\' { 2 } else { 1 };
                    column += 1;
                }
                column += 1;
            }
            b'/' if source.get(i + 1) == Some(&b'/') => {
                while i + 1 < source.len() && source[i + 1] != b'\n' {
                    i += 1;
                }
            }
            b'(' | b'[' | b'{' | b'<' => {
                depth += 1;
                if depth > MAX_NESTING_DEPTH {
                    return Some((line, column));
                }
            }
            // `->` and `>=` are not brackets.
            b'>' if i > 0 && source[i - 1] == b'-' => {}
            b'>' if source.get(i + 1) == Some(&b'=') => {}
            b')' | b']' | b'}' | b'>' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    None
}

/// The magic number MLIR bytecode starts with (`ML\xefR`).
pub const BYTECODE_MAGIC: &[u8] = b"ML\xefR";

/// Parses `source` (text or MLIR bytecode) as a module whose locations name
/// `name`, or `None` after emitting diagnostics. A lone top-level
/// `builtin.module` is the module itself; anything else is wrapped in one,
/// like `mlir-opt` does. Text nested deeper than [`MAX_NESTING_DEPTH`] is
/// rejected with a located error before MLIR sees it.
pub fn parse_module<'c>(context: &'c Context, sink: &DiagnosticSink, source: &[u8], name: &str) -> Option<Module<'c>> {
    // The text scans read brackets and `from_elements` types as text; in
    // MLIR bytecode those are binary (a string attribute's bytes could
    // look like deep nesting). Its reader resolves operands by index and
    // builds no type per element, so the checks after parsing suffice.
    let bytecode = source.starts_with(BYTECODE_MAGIC);
    if let Some((line, column)) = too_deep(source).filter(|_| !bytecode) {
        crate::ir::diagnostics::emit_error(
            Location::new(context, name, line, column),
            &format!("input nests deeper than {MAX_NESTING_DEPTH} levels of brackets and regions, which Blueprint does not accept"),
        );
        return None;
    }
    if let Some(oversized) = input_limits::oversized_from_elements(source).filter(|_| !bytecode) {
        input_limits::emit_oversized(context, name, &oversized, source.len());
        return None;
    }
    let module = parse_unverified(context, sink, source, name)?;
    // Blueprint's input limits first, then MLIR's verifier (the generated
    // C++ verifiers), as the parser would have run it.
    (input_limits::check_parsed(module.as_operation()) && module.as_operation().verify()).then_some(module)
}

/// The module of `source`, not yet verified.
fn parse_unverified<'c>(context: &'c Context, sink: &DiagnosticSink, source: &[u8], name: &str) -> Option<Module<'c>> {
    const SINGLE_OP: &str = "source must contain a single top-level operation";
    if let Some(operation) = parse_operation(context, source, name) {
        if crate::ir::read::op_name(&operation) == "builtin.module" {
            return Module::from_operation(operation);
        }
        let module = Module::new(Location::new(context, name, 1, 1));
        module.body().append_operation(operation);
        return Some(module);
    }
    // The C API parses exactly one top-level op. When that was the only
    // complaint, parse again inside a module opened on the first line, which
    // keeps every line number (only columns on line 1 move).
    let diagnostics = sink.take();
    let only_single_op = diagnostics.len() == 1 && diagnostics[0].message.starts_with(SINGLE_OP);
    if !only_single_op {
        sink.extend(diagnostics);
        return None;
    }
    let mut wrapped = b"module {".to_vec();
    wrapped.extend_from_slice(source);
    wrapped.extend_from_slice(b"\n}\n");
    Module::from_operation(parse_operation(context, &wrapped, name)?)
}

extern "C" {
    /// `src/tools/capi/parse.cpp`: `mlirOperationCreateParse` without the verifier.
    fn blueprintOperationParseUnverified(
        context: mlir_sys::MlirContext,
        source: mlir_sys::MlirStringRef,
        name: mlir_sys::MlirStringRef,
    ) -> mlir_sys::MlirOperation;
}

fn parse_operation<'c>(context: &'c Context, source: &[u8], name: &str) -> Option<melior::ir::Operation<'c>> {
    // SAFETY: a live context; MLIR copies what it keeps of the two strings.
    let raw = unsafe {
        blueprintOperationParseUnverified(
            context.to_raw(),
            mlir_sys::MlirStringRef { data: source.as_ptr().cast(), length: source.len() },
            mlir_sys::MlirStringRef { data: name.as_ptr().cast(), length: name.len() },
        )
    };
    (!raw.ptr.is_null()).then(|| unsafe { melior::ir::Operation::from_raw(raw) })
}

#[cfg(test)]
mod tests {
    use super::{locate_too_deep, nests_too_deep, too_deep, MAX_NESTING_DEPTH};

    /// Every special byte is found at every offset in and after a 16-byte block.
    #[test]
    fn next_special_finds_each_special_byte() {
        for &special in b"\"/([{<)]}>" {
            for at in 0..40 {
                let mut bytes = vec![b'a'; 48];
                bytes[at] = special;
                assert_eq!(super::next_special(&bytes), Some(at), "{} at {at}", special as char);
            }
        }
        assert_eq!(super::next_special(&[b'a'; 40]), None);
        assert_eq!(super::next_special(b""), None);
    }

    /// The fast scan and the located one agree, brackets inside strings,
    /// escapes, comments, `->` and `>=` included.
    #[test]
    fn fast_scan_agrees_with_located_scan() {
        let deep = "(".repeat(MAX_NESTING_DEPTH + 1);
        let at_limit = "(".repeat(MAX_NESTING_DEPTH);
        let cases = [
            String::new(),
            at_limit.clone(),
            deep.clone(),
            format!("\"{deep}\""),
            format!("\"a\\\"{deep}\""),
            format!("\"unterminated\n{deep}"),
            format!("// {deep}\n"),
            format!("// c\n{deep}"),
            format!("{at_limit}->"),
            format!("{at_limit}-><"),
            format!("{at_limit}>=<"),
            format!("{at_limit}><"),
            format!("{at_limit}\"\\\\\"<"),
            format!("x / y {deep}"),
            String::from("\"\\"),
            format!("{at_limit}\"x\\"),
            format!("{at_limit}//"),
            format!("{at_limit}// x"),
            format!("{at_limit}\"\\\n\"<"),
            format!("{at_limit}/<"),
        ];
        for case in &cases {
            let located = locate_too_deep(case.as_bytes());
            assert_eq!(nests_too_deep(case.as_bytes()), located.is_some(), "{case:?}");
            assert_eq!(too_deep(case.as_bytes()), located, "{case:?}");
        }
        assert_eq!(too_deep(format!("\n  {deep}").as_bytes()), Some((2, 3 + MAX_NESTING_DEPTH)));
    }
}
