//! Content digests of each layer of a module.
//!
//! A layer's digest is the SHA-256 of a canonical encoding of the ops that
//! make up the layer (its header and every top-level op or function holding
//! its ops), in module order: for each op, its name, its operands (by the
//! position at which the layer defines them), its attributes with typed
//! values, its result types and its regions, recursively. Locations are not
//! part of it, and neither are module attributes (strategy bindings, system
//! profiles, anything an estimate reads), so they never change a digest.
//!
//! The encoding is written from a walk of the IR, not by printing it: the
//! printer was most of the cost of planning a whole training step.

use melior::ir::{operation::OperationLike, OperationRef};
use mlir_sys::{MlirAttribute, MlirBlock, MlirOperation, MlirType, MlirValue};
use sha2::{Digest, Sha256};

use crate::ir::{raw::PtrMap, read::dialect_of};

/// `sha256:<64 hex>` of the ops of `dialect` (`model`, `dist` or `plan`)
/// at the top level of `module`.
#[must_use]
pub fn layer_digest(module: OperationRef, dialect: &str) -> String {
    layer_digest_visiting(module, dialect, 0, |_| {})
}

/// [`layer_digest`], calling `visit` on every op it encodes, in pre-order
/// (the order of a walk): a pass that reads each op anyway reads it while
/// the encoder has it in cache. `ops` (the layer's op count, if known)
/// sizes the table of values once instead of growing it.
#[must_use]
pub fn layer_digest_visiting(module: OperationRef, dialect: &str, ops: usize, mut visit: impl FnMut(MlirOperation)) -> String {
    let values = PtrMap::with_capacity_and_hasher(ops, Default::default());
    let mut encoder = Encoder { visit: Some(&mut visit), values, ..Encoder::default() };
    for op in crate::ir::read::region_ops(module, 0) {
        if holds_dialect(op, dialect) {
            // SAFETY: a live op of the module, walked while the module lives.
            unsafe { encoder.op(op.to_raw()) };
            encoder.bytes.push(b'\n');
            encoder.flush_if_large();
        }
    }
    encoder.hasher.update(&encoder.bytes);
    let digest = encoder.hasher.finalize();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

fn holds_dialect(op: OperationRef, dialect: &str) -> bool {
    let mut found = false;
    op.walk(melior::ir::operation::WalkOrder::PreOrder, |inner| {
        found = dialect_of(crate::ir::raw::identifier_str(inner.name())) == dialect;
        if found {
            melior::ir::operation::WalkResult::Interrupt
        } else {
            melior::ir::operation::WalkResult::Advance
        }
    });
    found
}

/// The canonical byte encoding of a sequence of ops, hashed in chunks.
/// Every variable-length item is length-prefixed and every attribute kind
/// tagged, so distinct IR cannot encode to the same bytes.
#[derive(Default)]
struct Encoder<'v> {
    /// Called on each op as it is encoded.
    visit: Option<&'v mut dyn FnMut(MlirOperation)>,
    hasher: Sha256,
    bytes: Vec<u8>,
    /// Number of each value defined in the encoded ops, in definition order.
    values: PtrMap<u64>,
    /// Values used but defined outside the encoded ops, in first-use order.
    external: PtrMap<u64>,
    blocks: PtrMap<u64>,
    /// Number of each name, type and attribute without a typed encoding,
    /// in first-use order (all are uniqued, so the pointer names the text,
    /// which is encoded at first use only).
    printed: PtrMap<u64>,
    /// Number of each (attribute name, attribute) pair of an op other
    /// than a string, in first-use order: both are uniqued, so the pair of
    /// pointers names the pair, encoded in full at its first use only.
    /// Most of a layer's attributes repeat (phases, slices, block and
    /// microbatch indices).
    named: NamedMap,
    /// The pairs of the last op encoded, by position, with their numbers:
    /// ops of a kind list their names in the same order and repeat many
    /// values, which this finds without hashing.
    last_named: Vec<(usize, usize, u64)>,
}

/// Keyed by (name, attribute) pointers, hashed by [`crate::ir::raw::PtrHasher`].
type NamedMap = std::collections::HashMap<(usize, usize), u64, std::hash::BuildHasherDefault<crate::ir::raw::PtrHasher>>;

const FLUSH_AT: usize = 1 << 16;

impl Encoder<'_> {
    fn flush_if_large(&mut self) {
        if self.bytes.len() >= FLUSH_AT {
            self.hasher.update(&self.bytes);
            self.bytes.clear();
        }
    }

    /// LEB128: most numbers here (counts, sizes, ranks) take a byte or two.
    fn u64(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.bytes.push((value as u8) | 0x80);
            value >>= 7;
        }
        self.bytes.push(value as u8);
    }

    fn text(&mut self, text: &[u8]) {
        self.u64(text.len() as u64);
        self.bytes.extend_from_slice(text);
    }

    unsafe fn string_ref(&mut self, raw: mlir_sys::MlirStringRef) {
        // SAFETY: MLIR's (pointer, length) pair of a live string.
        self.text(unsafe { crate::ir::raw::string_ref_bytes(raw) });
    }

    unsafe fn op(&mut self, op: MlirOperation) {
        if let Some(visit) = self.visit.as_mut() {
            visit(op);
        }
        unsafe {
            self.bytes.push(b'O');
            self.name(mlir_sys::mlirOperationGetName(op));
            let operands = mlir_sys::mlirOperationGetNumOperands(op);
            self.u64(operands as u64);
            for i in 0..operands {
                self.operand(mlir_sys::mlirOperationGetOperand(op, i));
            }
            let successors = mlir_sys::mlirOperationGetNumSuccessors(op);
            self.u64(successors as u64);
            for i in 0..successors {
                let number = self.block_number(mlir_sys::mlirOperationGetSuccessor(op, i));
                self.u64(number);
            }
            let attributes = crate::ir::read::named_attributes(op);
            self.u64(attributes.len() as u64);
            for (i, &named) in attributes.iter().enumerate() {
                self.named_attribute(i, named);
            }
            let results = mlir_sys::mlirOperationGetNumResults(op);
            self.u64(results as u64);
            for i in 0..results {
                self.define(mlir_sys::mlirOperationGetResult(op, i));
            }
            let regions = mlir_sys::mlirOperationGetNumRegions(op);
            self.u64(regions as u64);
            for i in 0..regions {
                let mut block = mlir_sys::mlirRegionGetFirstBlock(mlir_sys::mlirOperationGetRegion(op, i));
                while !block.ptr.is_null() {
                    self.block(block);
                    block = mlir_sys::mlirBlockGetNextInRegion(block);
                }
                self.bytes.push(b'r');
            }
        }
    }

    unsafe fn block(&mut self, block: MlirBlock) {
        unsafe {
            self.bytes.push(b'B');
            let number = self.block_number(block);
            self.u64(number);
            let arguments = mlir_sys::mlirBlockGetNumArguments(block);
            self.u64(arguments as u64);
            for i in 0..arguments {
                self.define(mlir_sys::mlirBlockGetArgument(block, i));
            }
            let mut op = mlir_sys::mlirBlockGetFirstOperation(block);
            while !op.ptr.is_null() {
                self.op(op);
                op = mlir_sys::mlirOperationGetNextInBlock(op);
            }
            self.bytes.push(b'b');
        }
    }

    /// Blocks are numbered where first seen (a branch may name a block
    /// before it appears).
    fn block_number(&mut self, block: MlirBlock) -> u64 {
        let next = self.blocks.len() as u64;
        *self.blocks.entry(block.ptr as usize).or_insert(next)
    }

    /// A value defined here: its type; later uses name it by number.
    unsafe fn define(&mut self, value: MlirValue) {
        let number = self.values.len() as u64;
        self.values.insert(value.ptr as usize, number);
        unsafe { self.ty(mlir_sys::mlirValueGetType(value)) };
    }

    unsafe fn operand(&mut self, value: MlirValue) {
        if let Some(&number) = self.values.get(&(value.ptr as usize)) {
            self.bytes.push(b'v');
            self.u64(number);
            return;
        }
        // Defined outside the layer's ops: numbered, with its type, where
        // first used.
        let next = self.external.len() as u64;
        let number = *self.external.entry(value.ptr as usize).or_insert(next);
        self.bytes.push(b'x');
        self.u64(number);
        if number == next {
            unsafe { self.ty(mlir_sys::mlirValueGetType(value)) };
        }
    }

    /// An op's attribute: `n` and the pair's number when seen before, else
    /// `N`, the name and the attribute (which numbers the pair).
    unsafe fn named_attribute(&mut self, position: usize, named: mlir_sys::MlirNamedAttribute) {
        let key = (named.name.ptr as usize, named.attribute.ptr as usize);
        if let Some(&(name, attribute, number)) = self.last_named.get(position) {
            if (name, attribute) == key {
                self.bytes.push(b'n');
                self.u64(number);
                return;
            }
        }
        // A string is mostly a task's own id, never seen again: written out
        // in full rather than numbered (the table would only grow).
        if unsafe { mlir_sys::mlirAttributeIsAString(named.attribute) } {
            self.bytes.push(b'N');
            unsafe {
                self.name(named.name);
                self.attribute(named.attribute);
            }
            return;
        }
        let next = self.named.len() as u64;
        let number = *self.named.entry(key).or_insert(next);
        if position < self.last_named.len() {
            self.last_named[position] = (key.0, key.1, number);
        } else if position == self.last_named.len() {
            self.last_named.push((key.0, key.1, number));
        }
        if number != next {
            self.bytes.push(b'n');
            self.u64(number);
            return;
        }
        self.bytes.push(b'N');
        unsafe {
            self.name(named.name);
            self.attribute(named.attribute);
        }
    }

    /// An op or attribute name: uniqued, so numbered like a type.
    unsafe fn name(&mut self, identifier: mlir_sys::MlirIdentifier) {
        // SAFETY: a live identifier; its bytes live as long as the context.
        let text = unsafe { mlir_sys::mlirIdentifierStr(identifier) };
        let bytes = unsafe { crate::ir::raw::string_ref_bytes(text) };
        self.printed(text.data as usize, |buffer| unsafe { &mut *buffer.cast::<Vec<u8>>() }.extend_from_slice(bytes));
    }

    unsafe fn ty(&mut self, ty: MlirType) {
        self.bytes.push(b't');
        // SAFETY: a live type; the callback appends to the buffer.
        self.printed(ty.ptr as usize, |text| unsafe { mlir_sys::mlirTypePrint(ty, Some(crate::ir::raw::append_bytes), text) });
    }

    /// The number of the uniqued object `key`; at its first use, also the
    /// text `print` appends to the buffer it is given.
    fn printed(&mut self, key: usize, print: impl FnOnce(*mut std::ffi::c_void)) {
        let next = self.printed.len() as u64;
        let number = *self.printed.entry(key).or_insert(next);
        self.u64(number);
        if number == next {
            let mut text: Vec<u8> = Vec::new();
            print((&raw mut text).cast());
            self.text(&text);
        }
    }

    unsafe fn attribute(&mut self, attribute: MlirAttribute) {
        unsafe {
            if mlir_sys::mlirAttributeIsAString(attribute) {
                self.bytes.push(b'S');
                self.string_ref(mlir_sys::mlirStringAttrGetValue(attribute));
                self.ty(mlir_sys::mlirAttributeGetType(attribute));
            } else if let Some(ty) = Some(attribute)
                .filter(|a| mlir_sys::mlirAttributeIsAInteger(*a))
                .map(|a| mlir_sys::mlirAttributeGetType(a))
                .filter(|t| mlir_sys::mlirTypeIsAInteger(*t) && mlir_sys::mlirIntegerTypeGetWidth(*t) <= 64)
            {
                // (The type is one interface lookup: read once.)
                self.bytes.push(b'I');
                self.u64(mlir_sys::mlirIntegerAttrGetValueInt(attribute) as u64);
                self.ty(ty);
            } else if mlir_sys::mlirAttributeIsAArray(attribute) {
                let n = mlir_sys::mlirArrayAttrGetNumElements(attribute);
                self.bytes.push(b'A');
                self.u64(n as u64);
                for i in 0..n {
                    self.attribute(mlir_sys::mlirArrayAttrGetElement(attribute, i));
                }
            } else if mlir_sys::mlirAttributeIsADictionary(attribute) {
                let n = mlir_sys::mlirDictionaryAttrGetNumElements(attribute);
                self.bytes.push(b'D');
                self.u64(n as u64);
                for i in 0..n {
                    let named = mlir_sys::mlirDictionaryAttrGetElement(attribute, i);
                    self.string_ref(mlir_sys::mlirIdentifierStr(named.name));
                    self.attribute(named.attribute);
                }
            } else if mlir_sys::mlirAttributeIsADenseI64Array(attribute) {
                let n = mlir_sys::mlirDenseArrayGetNumElements(attribute);
                self.bytes.push(b'd');
                self.u64(n as u64);
                for i in 0..n {
                    self.u64(mlir_sys::mlirDenseI64ArrayGetElement(attribute, i) as u64);
                }
            } else if mlir_sys::mlirAttributeIsAFlatSymbolRef(attribute) {
                self.bytes.push(b'F');
                self.string_ref(mlir_sys::mlirFlatSymbolRefAttrGetValue(attribute));
            } else {
                // Any other attribute: its printed form, once per attribute.
                self.bytes.push(b'P');
                self.printed(attribute.ptr as usize, |text| {
                    mlir_sys::mlirAttributePrint(attribute, Some(crate::ir::raw::append_bytes), text)
                });
            }
        }
    }
}
