//! What Blueprint checks of input IR before MLIR's parser and verifier
//! spend time or memory in it that the input's size does not bound, and
//! before Blueprint reads it as text.
//!
//! - `tensor.from_elements` and `vector.from_elements` take one operand per
//!   element of their result. Upstream, both the custom-form parser and the
//!   verifier first build one `Type` per element of the result type (16 GiB
//!   and about a minute for `tensor<2147483648xindex>`; `vector<4294967296x…>`
//!   aborts in `SmallVector`), and only then compare with the operands.
//!   Before parsing, a custom-form op whose type has more elements than the
//!   input has bytes (each operand takes at least two) is refused
//!   ([`oversized_from_elements`]); after parsing without the verifier, any
//!   form whose operand count differs from its element count is refused
//!   with MLIR's own rule ([`check_parsed`]), so the verifier never sees it.
//! - Symbol names (`sym_name`, and every symbol reference, nested in arrays
//!   and dictionaries too) must be UTF-8: MLIR accepts any bytes inside
//!   quotes (`@"w\FF"`), which Blueprint, reading names as text, cannot
//!   resolve (melior's `FlatSymbolRefAttribute::value` panics on them).
//!
//! Stock `mlir-opt` with the Blueprint plugin parses with MLIR's own parser
//! and verifier, so these limits hold in Blueprint's tools and library
//! (every tool parses through [`crate::ir::parse::parse_module`]) only.

use melior::ir::{operation::OperationLike, Location, OperationRef};

use crate::ir::{
    diagnostics::emit_error,
    raw::string_ref_bytes,
    read::{collect_ops, named_attributes},
};

/// The ops whose element count is checked.
const FROM_ELEMENTS: [&[u8]; 2] = [b"tensor.from_elements", b"vector.from_elements"];

/// A custom-form `from_elements` whose result type has more elements than
/// the input has bytes, so it cannot have an operand per element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Oversized {
    /// 1-based line and column of the op's name.
    pub line: usize,
    pub column: usize,
    pub op: &'static str,
    /// The result type as written (an alias resolved to its definition).
    pub ty: String,
    pub elements: u128,
}

impl Oversized {
    /// The diagnostic.
    #[must_use]
    pub fn message(&self, input_bytes: usize) -> String {
        format!(
            "'{}' builds {} ({} elements) from one operand per element, but the input has only {} bytes; Blueprint refuses it before MLIR's parser, which would allocate a type per element first",
            self.op, self.ty, self.elements, input_bytes
        )
    }
}

/// The first custom-form `tensor.from_elements` / `vector.from_elements`
/// in `source` (outside strings and comments) whose result type (a
/// `tensor<…>` / `vector<…>` or an alias of one) has more elements than
/// `source` has bytes.
#[must_use]
pub fn oversized_from_elements(source: &[u8]) -> Option<Oversized> {
    let limit = source.len() as u128;
    for (index, name) in FROM_ELEMENTS.iter().enumerate() {
        for at in memchr::memmem::find_iter(source, name) {
            let end = at + name.len();
            // A whole token: not part of a longer name, not the generic
            // form's quoted name, not in a comment.
            let before = at.checked_sub(1).map(|i| source[i]);
            if before.is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'"' | b'$'))
                || source.get(end).is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'$'))
                || in_comment_or_string(source, at)
            {
                continue;
            }
            let Some(colon) = type_colon(source, end) else { continue };
            let Some((ty, elements)) = result_elements(source, colon + 1, 0) else { continue };
            if elements > limit {
                let (line, column) = line_column(source, at);
                let op = if index == 0 { "tensor.from_elements" } else { "vector.from_elements" };
                return Some(Oversized { line, column, op, ty, elements });
            }
        }
    }
    None
}

/// Whether `at` lies in a `//` comment or a string literal of its line.
fn in_comment_or_string(source: &[u8], at: usize) -> bool {
    let start = memchr::memrchr(b'\n', &source[..at]).map_or(0, |n| n + 1);
    let mut i = start;
    let mut in_string = false;
    while i < at {
        match source[i] {
            b'\\' if in_string => i += 1,
            b'"' => in_string = !in_string,
            b'/' if !in_string && source.get(i + 1) == Some(&b'/') => return true,
            _ => {}
        }
        i += 1;
    }
    in_string
}

/// The `:` before the result type of a custom-form op whose name ends at
/// `from`: the first at bracket depth 0, skipping strings and comments.
fn type_colon(source: &[u8], from: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = from;
    while i < source.len() {
        match source[i] {
            b'"' => {
                i += 1;
                while i < source.len() && source[i] != b'"' {
                    i += if source[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'/' if source.get(i + 1) == Some(&b'/') => {
                i = memchr::memchr(b'\n', &source[i..]).map_or(source.len(), |k| i + k);
            }
            b'(' | b'[' | b'{' | b'<' => depth += 1,
            b')' | b']' | b'}' | b'>' => depth = depth.checked_sub(1)?,
            b':' if depth == 0 => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

/// The shaped type at `from` (after whitespace) as written and its element
/// count (saturating); `None` for anything else or a dynamic shape.
fn result_elements(source: &[u8], from: usize, aliases_followed: usize) -> Option<(String, u128)> {
    let rest = &source[from..];
    let rest = &rest[rest.iter().position(|b| !b.is_ascii_whitespace())?..];
    if rest.first() == Some(&b'!') && aliases_followed < 8 {
        let name_len = 1 + rest[1..].iter().position(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'$')))?;
        let definition = alias_definition(source, &rest[..name_len])?;
        return result_elements(source, definition, aliases_followed + 1);
    }
    let dims = rest.strip_prefix(b"tensor<").or_else(|| rest.strip_prefix(b"vector<"))?;
    let mut elements = 1u128;
    let mut i = 0;
    loop {
        // `N x`, or a scalable vector dimension `[N] x`.
        let scalable = dims.get(i) == Some(&b'[');
        let start = i + usize::from(scalable);
        let digits = dims[start..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 {
            break;
        }
        let mut next = start + digits;
        if scalable {
            if dims.get(next) != Some(&b']') {
                return None;
            }
            next += 1;
        }
        if dims.get(next) != Some(&b'x') {
            break;
        }
        let dim: u128 = std::str::from_utf8(&dims[start..start + digits]).ok()?.parse().unwrap_or(u128::MAX);
        elements = elements.saturating_mul(dim);
        i = next + 1;
    }
    if dims.get(i) == Some(&b'?') {
        return None;
    }
    let close = dims.iter().position(|b| *b == b'>').map_or(dims.len(), |k| k + 1);
    let prefix = &rest[..rest.len() - dims.len()];
    let written = [prefix, &dims[..close]].concat();
    Some((String::from_utf8_lossy(&written).into_owned(), elements))
}

/// Where the definition of the type alias `name` (`!name = …` at the start
/// of a line) begins.
fn alias_definition(source: &[u8], name: &[u8]) -> Option<usize> {
    memchr::memmem::find_iter(source, name).find_map(|at| {
        let line_start = memchr::memrchr(b'\n', &source[..at]).map_or(0, |n| n + 1);
        if !source[line_start..at].iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        let after = at + name.len();
        let rest = &source[after..];
        let skip = rest.iter().position(|b| *b != b' ' && *b != b'\t')?;
        (rest[skip] == b'=').then_some(after + skip + 1)
    })
}

fn line_column(source: &[u8], at: usize) -> (usize, usize) {
    let before = &source[..at];
    let line = memchr::memchr_iter(b'\n', before).count() + 1;
    let column = at - memchr::memrchr(b'\n', before).map_or(0, |n| n + 1) + 1;
    (line, column)
}

/// Checks a module parsed without the verifier (see the module docs);
/// emits a located error for each violation and returns whether there was
/// none. Runs before MLIR's verifier.
#[must_use]
pub fn check_parsed(root: OperationRef) -> bool {
    let mut ok = true;
    for op in collect_ops(root) {
        let raw = op.to_raw();
        // SAFETY: a live op of the module; MLIR's identifier string lives
        // as long as the context.
        let name = unsafe { string_ref_bytes(mlir_sys::mlirIdentifierStr(mlir_sys::mlirOperationGetName(raw))) };
        if FROM_ELEMENTS.contains(&name) {
            ok &= check_from_elements(op, name);
        }
        // SAFETY: a live op; the slice is read before anything changes.
        for named in unsafe { named_attributes(raw) } {
            // SAFETY: an attribute name of the op.
            let key = unsafe { string_ref_bytes(mlir_sys::mlirIdentifierStr(named.name)) };
            if let Some(bad) = non_utf8_symbol(named.attribute, key == b"sym_name") {
                emit_error(
                    op.location(),
                    &format!(
                        "symbol name @\"{}\" (attribute '{}') is not valid UTF-8; Blueprint reads symbol names as text",
                        escaped(&bad),
                        String::from_utf8_lossy(key)
                    ),
                );
                ok = false;
            }
        }
    }
    ok
}

/// MLIR's rule for `tensor.from_elements` / `vector.from_elements` (one
/// operand per element of the static result), checked in constant time.
fn check_from_elements(op: OperationRef, name: &[u8]) -> bool {
    let raw = op.to_raw();
    // SAFETY: a live op.
    let (operands, results) = unsafe { (mlir_sys::mlirOperationGetNumOperands(raw), mlir_sys::mlirOperationGetNumResults(raw)) };
    if results != 1 {
        // The verifier reports the result count; it allocates nothing per element then.
        return true;
    }
    // SAFETY: the op's only result, and its type.
    let ty = unsafe { mlir_sys::mlirValueGetType(mlir_sys::mlirOperationGetResult(raw, 0)) };
    // SAFETY: a live type; dims read within its rank.
    let elements = unsafe {
        if !(mlir_sys::mlirTypeIsARankedTensor(ty) || mlir_sys::mlirTypeIsAVector(ty)) || !mlir_sys::mlirShapedTypeHasStaticShape(ty) {
            return true;
        }
        (0..mlir_sys::mlirShapedTypeGetRank(ty))
            .map(|i| u128::try_from(mlir_sys::mlirShapedTypeGetDimSize(ty, i as isize)).unwrap_or(0))
            .fold(1u128, u128::saturating_mul)
    };
    if elements == operands as u128 {
        return true;
    }
    // SAFETY: a live type.
    let spelled = crate::ir::read::type_string(unsafe { melior::ir::Type::from_raw(ty) });
    emit_error(
        op.location(),
        &format!(
            "'{}' op has {operands} operand(s) for the {elements} elements of {spelled}: it takes one operand per element",
            String::from_utf8_lossy(name)
        ),
    );
    false
}

/// The first symbol name in `attribute` (a symbol reference, its nested
/// references, or any inside arrays and dictionaries; the string itself
/// when `is_sym_name`) that is not UTF-8.
fn non_utf8_symbol(attribute: mlir_sys::MlirAttribute, is_sym_name: bool) -> Option<Vec<u8>> {
    let bad = |raw: mlir_sys::MlirStringRef| {
        // SAFETY: MLIR's string, alive with the context.
        let bytes = unsafe { string_ref_bytes(raw) };
        (!bytes.is_ascii() && std::str::from_utf8(bytes).is_err()).then(|| bytes.to_vec())
    };
    // SAFETY: a live attribute, read within its element counts.
    unsafe {
        if mlir_sys::mlirAttributeIsASymbolRef(attribute) {
            if let Some(found) = bad(mlir_sys::mlirSymbolRefAttrGetRootReference(attribute)) {
                return Some(found);
            }
            return (0..mlir_sys::mlirSymbolRefAttrGetNumNestedReferences(attribute))
                .find_map(|i| bad(mlir_sys::mlirFlatSymbolRefAttrGetValue(mlir_sys::mlirSymbolRefAttrGetNestedReference(attribute, i))));
        }
        if is_sym_name && mlir_sys::mlirAttributeIsAString(attribute) {
            return bad(mlir_sys::mlirStringAttrGetValue(attribute));
        }
        if mlir_sys::mlirAttributeIsAArray(attribute) {
            return (0..mlir_sys::mlirArrayAttrGetNumElements(attribute))
                .find_map(|i| non_utf8_symbol(mlir_sys::mlirArrayAttrGetElement(attribute, i), false));
        }
        if mlir_sys::mlirAttributeIsADictionary(attribute) {
            return (0..mlir_sys::mlirDictionaryAttrGetNumElements(attribute))
                .find_map(|i| non_utf8_symbol(mlir_sys::mlirDictionaryAttrGetElement(attribute, i).attribute, false));
        }
    }
    None
}

/// Bytes as MLIR prints them in a string: printable ASCII as is, the rest
/// as `\XX`.
fn escaped(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|&b| if (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\' { char::from(b).to_string() } else { format!("\\{b:02X}") })
        .collect()
}

/// A located error for an [`Oversized`] op of the input `name`.
pub fn emit_oversized(context: &melior::Context, name: &str, oversized: &Oversized, input_bytes: usize) {
    emit_error(Location::new(context, name, oversized.line, oversized.column), &oversized.message(input_bytes));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_oversized_custom_forms() {
        let source = b"func.func @f(%a: index) -> tensor<2147483648xindex> {\n  %t = tensor.from_elements %a : tensor<2147483648xindex>\n  return %t : tensor<2147483648xindex>\n}\n";
        let found = oversized_from_elements(source).expect("oversized");
        assert_eq!((found.line, found.column, found.op, found.elements), (2, 8, "tensor.from_elements", 2_147_483_648));
        assert_eq!(found.ty, "tensor<2147483648xindex>");
        // Several dims multiply; vectors and scalable dims count too.
        let vector = b"%v = vector.from_elements %a {x = 1 : i64} : vector<65536x[65536]xf32>";
        let found = oversized_from_elements(vector).expect("vector");
        assert_eq!((found.op, found.elements), ("vector.from_elements", 1 << 32));
        // An alias resolves to its definition.
        let aliased = b"!big = tensor<1000000x1000000xi8>\nfunc.func @f(%a: i8) {\n  %t = tensor.from_elements %a : !big\n  return\n}\n";
        let found = oversized_from_elements(aliased).expect("alias");
        assert_eq!((found.line, found.elements, found.ty.as_str()), (3, 1_000_000_000_000, "tensor<1000000x1000000xi8>"));
    }

    #[test]
    fn leaves_everything_else_to_mlir() {
        let cases: [&[u8]; 7] = [
            // Small enough to have an operand per element: MLIR decides.
            b"%t = tensor.from_elements %a, %b : tensor<2xindex>",
            b"%t = tensor.from_elements %a : tensor<16xindex>",
            // Comments, strings and the generic form (checked after parsing).
            b"// %t = tensor.from_elements %a : tensor<2147483648xindex>",
            b"%s = \"tensor.from_elements %a : tensor<2147483648xindex>\"",
            b"%s = \"in a string: tensor.from_elements %a : tensor<2147483648xindex>\"",
            b"%t = \"tensor.from_elements\"(%a) : (index) -> tensor<2147483648xindex>",
            // Dynamic shapes are MLIR's error.
            b"%t = tensor.from_elements %a : tensor<?x2147483648xindex>",
        ];
        for source in cases {
            assert_eq!(oversized_from_elements(source), None, "{}", String::from_utf8_lossy(source));
        }
    }

    #[test]
    fn escapes_like_mlir() {
        assert_eq!(escaped(b"w\xff\"x"), "w\\FF\\22x");
    }
}
