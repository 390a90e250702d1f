//! The C API's plain values as Rust reads them: MLIR's (pointer, length)
//! strings and identifiers as bytes and text, the print callback that
//! appends to a buffer, and the hash maps keyed by uniqued handles or by
//! short strings. A leaf: every other module of [`crate::ir`] builds on it.

use std::ffi::c_void;

/// The text of an identifier (attribute names, op names), empty-safe.
#[must_use]
pub fn identifier_str<'c>(identifier: melior::ir::Identifier<'c>) -> &'c str {
    string_ref_str(identifier.as_string_ref().to_raw())
}

/// The text of MLIR's (pointer, length) string (see [`text_of`]).
#[must_use]
pub fn string_ref_str<'c>(raw: mlir_sys::MlirStringRef) -> &'c str {
    // SAFETY: MLIR's strings handed to this module live as long as the context.
    text_of(unsafe { string_ref_bytes(raw) })
}

/// The bytes of MLIR's (pointer, length) pair; MLIR gives a null pointer
/// for empty strings, which a slice must not have.
///
/// # Safety
/// `raw` points at `length` live bytes (or is null) for the lifetime `'a`.
#[must_use]
pub unsafe fn string_ref_bytes<'a>(raw: mlir_sys::MlirStringRef) -> &'a [u8] {
    if raw.data.is_null() || raw.length == 0 {
        return &[];
    }
    // SAFETY: the caller's promise.
    unsafe { std::slice::from_raw_parts(raw.data.cast::<u8>(), raw.length) }
}

/// Bytes from MLIR as text; not UTF-8 reads as a placeholder. Names and
/// nearly every string are ASCII, which is checked a word at a time
/// before the full validation.
#[must_use]
pub fn text_of(bytes: &[u8]) -> &str {
    if bytes.is_ascii() {
        // SAFETY: ASCII is UTF-8.
        return unsafe { std::str::from_utf8_unchecked(bytes) };
    }
    std::str::from_utf8(bytes).unwrap_or("<invalid utf-8>")
}

/// A print callback that appends MLIR's bytes to a `Vec<u8>`, never failing.
///
/// # Safety
/// `data` must point to a live `Vec<u8>` not otherwise borrowed during the
/// call, and `text` must be a valid (pointer, length) pair, as MLIR's print
/// functions pass.
pub unsafe extern "C" fn append_bytes(text: mlir_sys::MlirStringRef, data: *mut c_void) {
    if text.data.is_null() || text.length == 0 {
        return;
    }
    // SAFETY: MLIR passes a valid (pointer, length) pair and our buffer.
    let bytes = unsafe { std::slice::from_raw_parts(text.data.cast::<u8>(), text.length) };
    unsafe { &mut *data.cast::<Vec<u8>>() }.extend_from_slice(bytes);
}

/// A hasher for keys that are pointers (uniqued MLIR objects, values):
/// one multiply, instead of SipHash over eight bytes.
#[derive(Default)]
pub struct PtrHasher(u64);

impl std::hash::Hasher for PtrHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }

    fn write_usize(&mut self, value: usize) {
        // The low bits of a pointer are alignment zeros: mix them up.
        self.0 = (value as u64 ^ self.0).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_right(29);
    }
}

/// A map keyed by pointers, hashed by [`PtrHasher`].
pub type PtrMap<V> = std::collections::HashMap<usize, V, std::hash::BuildHasherDefault<PtrHasher>>;

/// A hasher for short keys such as task ids: FxHash's multiply per eight
/// bytes, instead of SipHash's rounds. Not collision-resistant against an
/// adversary, which keys read from one's own IR do not need.
#[derive(Default, Clone, Copy)]
pub struct FxHasher(u64);

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl std::hash::Hasher for FxHasher {
    fn finish(&self) -> u64 {
        // hashbrown takes its control byte from the top bits, the bucket
        // from the low ones: bring the well-mixed high bits down.
        self.0.rotate_left(26)
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for chunk in &mut words {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, value: u8) {
        self.add(u64::from(value));
    }

    fn write_u32(&mut self, value: u32) {
        self.add(u64::from(value));
    }

    fn write_u64(&mut self, value: u64) {
        self.add(value);
    }

    fn write_usize(&mut self, value: usize) {
        self.add(value as u64);
    }
}

/// A map hashed by [`FxHasher`] (string keys borrowed from the IR).
pub type FxMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<FxHasher>>;
