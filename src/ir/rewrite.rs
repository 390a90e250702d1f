//! Small mutation helpers shared by Blueprint's passes. Passes collect the
//! ops they change first (validating everything), then mutate through
//! these, so a failing pass leaves its input untouched.

use melior::ir::{
    block::BlockLike, operation::OperationLike, Attribute, Identifier, Module, OperationRef, RegionLike, Type, Value, ValueLike,
};

// melior's `ContextRef::to_ref` borrows a temporary, so helpers here build
// types, attributes and identifiers from the raw context of an existing op.

fn string_ref(text: &str) -> mlir_sys::MlirStringRef {
    mlir_sys::MlirStringRef { data: text.as_ptr().cast(), length: text.len() }
}

fn raw_context(op: OperationRef) -> mlir_sys::MlirContext {
    // SAFETY: a live op always has a live context.
    unsafe { mlir_sys::mlirOperationGetContext(op.to_raw()) }
}

/// Parses a type that Blueprint itself spells (never user input) in the
/// context of `anchor`.
#[must_use]
pub fn known_type<'c>(anchor: OperationRef<'c, '_>, spelling: &str) -> Type<'c> {
    // SAFETY: the context of a live op is live; the string outlives the call.
    let raw = unsafe { mlir_sys::mlirTypeParseGet(raw_context(anchor), string_ref(spelling)) };
    assert!(!raw.ptr.is_null(), "Blueprint's own type '{spelling}' failed to parse");
    unsafe { Type::from_raw(raw) }
}

/// Parses an attribute Blueprint spells itself (numbers, strings it formats).
#[must_use]
pub fn known_attribute<'c>(anchor: OperationRef<'c, '_>, spelling: &str) -> Attribute<'c> {
    // SAFETY: as for `known_type`.
    let raw = unsafe { mlir_sys::mlirAttributeParseGet(raw_context(anchor), string_ref(spelling)) };
    assert!(!raw.ptr.is_null(), "Blueprint's own attribute '{spelling}' failed to parse");
    unsafe { Attribute::from_raw(raw) }
}

/// An identifier in the context of `anchor`.
#[must_use]
pub fn identifier<'c>(anchor: OperationRef<'c, '_>, name: &str) -> Identifier<'c> {
    // SAFETY: as for `known_type`.
    unsafe { Identifier::from_raw(mlir_sys::mlirIdentifierGet(raw_context(anchor), string_ref(name))) }
}

/// Replaces every use of `from` with `to`.
pub fn replace_all_uses<'c>(from: Value<'c, '_>, to: Value<'c, '_>) {
    // SAFETY: both values are live in the same context.
    unsafe { mlir_sys::mlirValueReplaceAllUsesOfWith(from.to_raw(), to.to_raw()) }
}

/// Erases an op that no longer has uses.
pub fn erase(op: OperationRef) {
    // SAFETY: `mlirOperationDestroy` erases the op from its block; callers
    // have replaced every use of its results first.
    unsafe { mlir_sys::mlirOperationDestroy(op.to_raw()) }
}

/// Moves `op` to just before `before` (which may be in another block).
pub fn move_before(op: OperationRef, before: OperationRef) {
    // SAFETY: both ops are live and attached.
    unsafe { mlir_sys::mlirOperationMoveBefore(op.to_raw(), before.to_raw()) }
}

/// Every attribute of `op` as (name, value) pairs, for cloning into a new op.
#[must_use]
pub fn attributes_of<'c>(op: OperationRef<'c, '_>) -> Vec<(Identifier<'c>, Attribute<'c>)> {
    op.attributes().collect()
}

/// Moves every top-level op of `generated` to the end of `module`'s body;
/// returns the first one moved.
pub fn move_into<'c, 'a>(generated: &Module, module: OperationRef<'c, 'a>) -> Option<OperationRef<'c, 'a>> {
    let (Ok(target), source) = (module.region(0), generated.body()) else { return None };
    let target = target.first_block()?;
    let mut moved = Vec::new();
    let mut next = source.first_operation();
    while let Some(op) = next {
        moved.push(op.to_raw());
        next = op.next_in_block();
    }
    for &raw in &moved {
        // SAFETY: each op is live and owned by `generated`; it moves to `target`.
        unsafe {
            mlir_sys::mlirOperationRemoveFromParent(raw);
            mlir_sys::mlirBlockAppendOwnedOperation(target.to_raw(), raw);
        }
    }
    // SAFETY: now owned by the module, which outlives 'a.
    moved.first().map(|raw| unsafe { OperationRef::from_raw(*raw) })
}
