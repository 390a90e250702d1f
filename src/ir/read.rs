//! Small read-only helpers over melior's IR handles.

use super::raw::{identifier_str, string_ref_bytes, string_ref_str, FxMap, PtrMap};
use melior::ir::{
    attribute::{ArrayAttribute, DictionaryAttribute},
    block::BlockLike,
    operation::OperationLike,
    r#type::{DimSize, RankedTensorType, ShapedTypeLike},
    Attribute, AttributeLike, OperationRef, RegionLike, Type, TypeLike, Value, ValueLike,
};

/// Every op under `root` (itself included) in pre-order. The walk's
/// callback lifetimes forbid keeping refs, so raw handles are collected and
/// rebuilt; they stay valid while `root` is not mutated.
#[must_use]
pub fn collect_ops<'c, 'a>(root: OperationRef<'c, 'a>) -> Vec<OperationRef<'c, 'a>> {
    unsafe extern "C" fn extend(data: *mut std::ffi::c_void, ops: *const mlir_sys::MlirOperation, count: isize) {
        // SAFETY: `data` is the Vec below; MLIR passes `count` ops.
        let raw = unsafe { &mut *data.cast::<Vec<mlir_sys::MlirOperation>>() };
        if !ops.is_null() && count > 0 {
            raw.extend_from_slice(unsafe { std::slice::from_raw_parts(ops, count as usize) });
        }
    }
    // One walk in C++ (src/capi/read.cpp): a Rust callback per op cost
    // more than the walk itself.
    let mut raw: Vec<mlir_sys::MlirOperation> = Vec::new();
    // SAFETY: a live op; `extend` appends to `raw` once.
    unsafe { blueprintCollectOps(root.to_raw(), Some(extend), (&raw mut raw).cast()) };
    raw.into_iter().map(|r| unsafe { OperationRef::from_raw(r) }).collect()
}

/// [`collect_ops`]'s walk by the previous way, for the test that the two
/// agree.
#[cfg(test)]
fn collect_ops_by_walk<'c, 'a>(root: OperationRef<'c, 'a>) -> Vec<OperationRef<'c, 'a>> {
    use melior::ir::operation::{WalkOrder, WalkResult};
    let mut raw = Vec::new();
    root.walk(WalkOrder::PreOrder, |op| {
        raw.push(op.to_raw());
        WalkResult::Advance
    });
    raw.into_iter().map(|r| unsafe { OperationRef::from_raw(r) }).collect()
}

/// The ops directly in the first block of region `index` of `op` (the
/// whole region for Blueprint's single-block regions and for modules);
/// empty when there is no such region.
#[must_use]
pub fn region_ops<'c, 'a>(op: OperationRef<'c, 'a>, index: usize) -> Vec<OperationRef<'c, 'a>> {
    let mut ops = Vec::new();
    let Some(block) = op.region(index).ok().and_then(|r| r.first_block()) else { return ops };
    let mut next = block.first_operation();
    while let Some(current) = next {
        ops.push(current);
        next = current.next_in_block();
    }
    ops
}

/// The op's full name, `dialect.mnemonic`.
#[must_use]
pub fn op_name<'c>(op: &impl OperationLike<'c, 'c>) -> String {
    identifier_str(op.name()).to_string()
}

/// Full name of an op given by ref.
#[must_use]
pub fn name_of(op: OperationRef) -> String {
    identifier_str(op.name()).to_string()
}

#[must_use]
pub fn dialect_of(name: &str) -> &str {
    // A byte scan: `split` builds a searcher for every op name.
    match name.as_bytes().iter().position(|&b| b == b'.') {
        Some(dot) => &name[..dot],
        None => name,
    }
}

#[must_use]
pub fn str_attr<'c>(op: OperationRef<'c, '_>, name: &str) -> Option<&'c str> {
    string_value(op.attribute(name).ok()?)
}

/// The text of a string attribute. melior's own accessor builds a slice
/// from the null pointer MLIR returns for `""`, so go through the C API.
#[must_use]
pub fn string_value<'c>(attribute: Attribute<'c>) -> Option<&'c str> {
    if !attribute.is_string() {
        return None;
    }
    Some(string_ref_str(unsafe { mlir_sys::mlirStringAttrGetValue(attribute.to_raw()) }))
}

/// An ODS enum attribute of `op` (stored as an integer), if it is a case.
#[must_use]
pub fn enum_attr<E: crate::ir::ods::OdsEnum>(op: OperationRef, name: &str) -> Option<E> {
    E::from_value(int_attr(op, name)?)
}

#[must_use]
pub fn int_attr(op: OperationRef, name: &str) -> Option<i64> {
    int_value(op.attribute(name).ok()?)
}

/// A non-negative integer attribute (counts, sizes, indices).
#[must_use]
pub fn u64_attr(op: OperationRef, name: &str) -> Option<u64> {
    int_attr(op, name).and_then(|v| u64::try_from(v).ok())
}

#[must_use]
pub fn int_value(attribute: Attribute) -> Option<i64> {
    let raw = attribute.to_raw();
    // SAFETY: a live attribute, read only when it is an integer.
    unsafe { mlir_sys::mlirAttributeIsAInteger(raw).then(|| mlir_sys::mlirIntegerAttrGetValueInt(raw)) }
}

#[must_use]
pub fn i64_array_attr(op: OperationRef, name: &str) -> Option<Vec<i64>> {
    i64_array_value(op.attribute(name).ok()?)
}

#[must_use]
pub fn i64_array_value(attribute: Attribute) -> Option<Vec<i64>> {
    // melior's failing `try_from` prints the attribute into its error, so
    // every conversion here checks the kind first.
    if !attribute.is_dense_i64_array() {
        return None;
    }
    let raw = attribute.to_raw();
    // SAFETY: a live dense i64 array, read within its length.
    let len = unsafe { mlir_sys::mlirDenseArrayGetNumElements(raw) };
    Some((0..len).map(|i| unsafe { mlir_sys::mlirDenseI64ArrayGetElement(raw, i) }).collect())
}

/// Elements of a `array<i32: ...>` attribute (such as `operandSegmentSizes`).
#[must_use]
pub fn i32_array_attr(op: OperationRef, name: &str) -> Option<Vec<i64>> {
    let attribute = op.attribute(name).ok()?;
    if !attribute.is_dense_i32_array() {
        return None;
    }
    let raw = attribute.to_raw();
    let len = unsafe { mlir_sys::mlirDenseArrayGetNumElements(raw) };
    Some((0..len).map(|i| i64::from(unsafe { mlir_sys::mlirDenseI32ArrayGetElement(raw, i) })).collect())
}

#[must_use]
pub fn symbol_attr<'c>(op: OperationRef<'c, '_>, name: &str) -> Option<&'c str> {
    symbol_value(op.attribute(name).ok()?)
}

/// The symbol a flat symbol reference attribute names; `None` for any
/// other attribute and for a name that is not UTF-8 (which
/// [`crate::ir::input_limits`] refuses in input; melior's
/// `FlatSymbolRefAttribute::value` would panic on it).
#[must_use]
pub fn symbol_value(attribute: Attribute<'_>) -> Option<&str> {
    if !attribute.is_flat_symbol_ref() {
        return None;
    }
    // SAFETY: a live flat symbol reference; its string lives with the context.
    let bytes = unsafe { crate::ir::raw::string_ref_bytes(mlir_sys::mlirFlatSymbolRefAttrGetValue(attribute.to_raw())) };
    std::str::from_utf8(bytes).ok()
}

/// A list of strings, if `attribute` is an array of string attributes.
#[must_use]
pub fn string_list(attribute: Attribute) -> Option<Vec<String>> {
    if !attribute.is_array() {
        return None;
    }
    let array = ArrayAttribute::try_from(attribute).ok()?;
    (0..array.len())
        .map(|i| {
            let element = array.element(i).ok()?;
            string_value(element).map(str::to_string)
        })
        .collect()
}

/// For an array of string attributes: its only element, or `Some(None)` at
/// any other length; `None` when `attribute` is no array of strings. Reads
/// without allocating.
#[must_use]
pub fn sole_string<'c>(attribute: Attribute<'c>) -> Option<Option<&'c str>> {
    if !attribute.is_array() {
        return None;
    }
    let raw = attribute.to_raw();
    // SAFETY: a live array attribute, read within its length.
    let n = unsafe { mlir_sys::mlirArrayAttrGetNumElements(raw) };
    let mut only = None;
    for i in 0..n {
        only = Some(string_value(unsafe { Attribute::from_raw(mlir_sys::mlirArrayAttrGetElement(raw, i)) })?);
    }
    Some(if n == 1 { only } else { None })
}

/// Whether `attribute` is an array of exactly the strings `want`, compared
/// without allocating.
#[must_use]
pub fn is_string_list(attribute: Attribute, want: &[&str]) -> bool {
    if !attribute.is_array() {
        return false;
    }
    let raw = attribute.to_raw();
    // SAFETY: a live array attribute, read within its length.
    let n = unsafe { mlir_sys::mlirArrayAttrGetNumElements(raw) };
    usize::try_from(n).ok() == Some(want.len())
        && want
            .iter()
            .enumerate()
            .all(|(i, w)| string_value(unsafe { Attribute::from_raw(mlir_sys::mlirArrayAttrGetElement(raw, i as isize)) }) == Some(*w))
}

/// A list of lists of strings (`split_axes`), if `attribute` is one.
#[must_use]
pub fn string_list_list(attribute: Attribute) -> Option<Vec<Vec<String>>> {
    if !attribute.is_array() {
        return None;
    }
    let array = ArrayAttribute::try_from(attribute).ok()?;
    (0..array.len()).map(|i| string_list(array.element(i).ok()?)).collect()
}

/// Attribute names and string values nested in `attribute` (through arrays
/// and dictionaries), for the forbidden-field checks.
pub fn visit_nested(attribute: Attribute, visit: &mut dyn FnMut(Nested)) {
    if attribute.is_dictionary() {
        let Ok(dictionary) = DictionaryAttribute::try_from(attribute) else { return };
        for i in 0..dictionary.len() {
            if let Ok((key, value)) = dictionary.element(i) {
                visit(Nested::Key(identifier_str(key)));
                visit_nested(value, visit);
            }
        }
    } else if attribute.is_array() {
        let Ok(array) = ArrayAttribute::try_from(attribute) else { return };
        for i in 0..array.len() {
            if let Ok(element) = array.element(i) {
                visit_nested(element, visit);
            }
        }
    } else if let Some(string) = string_value(attribute) {
        visit(Nested::String(string));
    }
}

pub enum Nested<'s> {
    Key(&'s str),
    String(&'s str),
}

/// Shape of a ranked tensor type (`None` for dynamic dims), or `None`.
#[must_use]
pub fn tensor_shape(ty: Type) -> Option<Vec<Option<i64>>> {
    if !ty.is_ranked_tensor() {
        return None;
    }
    let tensor = RankedTensorType::try_from(ty).ok()?;
    Some(
        (0..tensor.rank())
            .map(|i| match tensor.dim_size(i) {
                Ok(DimSize::Static(d)) => i64::try_from(d).ok(),
                _ => None,
            })
            .collect(),
    )
}

/// Whether a ranked tensor type carries an encoding attribute.
#[must_use]
pub fn tensor_has_encoding(ty: Type) -> bool {
    ty.is_ranked_tensor() && RankedTensorType::try_from(ty).ok().and_then(|t| t.encoding()).is_some()
}

/// Element type of a ranked tensor type.
#[must_use]
pub fn tensor_element<'c>(ty: Type<'c>) -> Option<Type<'c>> {
    if !ty.is_ranked_tensor() {
        return None;
    }
    RankedTensorType::try_from(ty).ok().map(|t| t.element())
}

/// The op that defines `value`, if it is an op result.
#[must_use]
pub fn defining_op<'c, 'a>(value: Value<'c, 'a>) -> Option<OperationRef<'c, 'a>> {
    if !value.is_operation_result() {
        return None;
    }
    let result = melior::ir::operation::OperationResult::try_from(value).ok()?;
    Some(result.owner())
}

/// Every op that uses `value` as an operand, once each, in use-list order.
#[must_use]
pub fn users<'c, 'a>(value: impl ValueLike<'c>) -> Vec<OperationRef<'c, 'a>> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    unsafe {
        let mut operand = mlir_sys::mlirValueGetFirstUse(value.to_raw());
        while !mlir_sys::mlirOpOperandIsNull(operand) {
            let owner = OperationRef::from_raw(mlir_sys::mlirOpOperandGetOwner(operand));
            if seen.insert(owner.to_raw().ptr) {
                out.push(owner);
            }
            operand = mlir_sys::mlirOpOperandGetNextUse(operand);
        }
    }
    out
}

/// Printed form of a type, for messages. Lossy: melior's `Display`
/// panics when MLIR prints bytes that are not UTF-8 (user input can hold
/// them), so every printer here goes through the C API.
#[must_use]
pub fn type_string(ty: Type) -> String {
    let mut buffer = Vec::new();
    // SAFETY: a live type; `append_bytes` appends to `buffer`.
    unsafe { mlir_sys::mlirTypePrint(ty.to_raw(), Some(crate::ir::raw::append_bytes), (&raw mut buffer).cast()) };
    String::from_utf8_lossy(&buffer).into_owned()
}

/// Printed form of an attribute, for messages (lossy, see [`type_string`]).
#[must_use]
pub fn attribute_text(attribute: Attribute) -> String {
    let mut buffer = Vec::new();
    // SAFETY: a live attribute; `append_bytes` appends to `buffer`.
    unsafe {
        mlir_sys::mlirAttributePrint(attribute.to_raw(), Some(crate::ir::raw::append_bytes), (&raw mut buffer).cast());
    }
    String::from_utf8_lossy(&buffer).into_owned()
}

/// Printed form of a location (lossy, see [`type_string`]).
#[must_use]
pub fn location_text(location: melior::ir::Location) -> String {
    let mut buffer = Vec::new();
    // SAFETY: a live location; `append_bytes` appends to `buffer`.
    unsafe {
        mlir_sys::mlirLocationPrint(location.to_raw(), Some(crate::ir::raw::append_bytes), (&raw mut buffer).cast());
    }
    String::from_utf8_lossy(&buffer).into_owned()
}

/// Printed form of an op with `flags`, as raw bytes (an op's text may hold
/// bytes that are not UTF-8).
#[must_use]
pub fn op_bytes(op: OperationRef, flags: &melior::ir::operation::OperationPrintingFlags) -> Vec<u8> {
    let mut buffer = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = print_op_to(op, flags, &mut buffer);
    buffer
}

extern "C" {
    // src/capi/print.cpp: mlirOperationPrintWithFlags through a buffer.
    fn blueprintOperationPrintBuffered(
        op: mlir_sys::MlirOperation,
        flags: mlir_sys::MlirOpPrintingFlags,
        callback: mlir_sys::MlirStringCallback,
        user_data: *mut std::ffi::c_void,
    );
}

/// Prints an op with `flags` into `out` as MLIR produces it, 64 KiB at a
/// time, never holding the whole text.
///
/// # Errors
/// The first error of `out`; nothing more is written after it.
pub fn print_op_to(
    op: OperationRef,
    flags: &melior::ir::operation::OperationPrintingFlags,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    struct Sink<'a> {
        out: &'a mut dyn std::io::Write,
        error: Option<std::io::Error>,
    }
    unsafe extern "C" fn write_chunk(text: mlir_sys::MlirStringRef, data: *mut std::ffi::c_void) {
        // SAFETY: `data` is the `Sink` below, alive for the whole print.
        let sink = unsafe { &mut *data.cast::<Sink>() };
        if sink.error.is_some() || text.data.is_null() || text.length == 0 {
            return;
        }
        // SAFETY: MLIR passes a valid (pointer, length) pair.
        let bytes = unsafe { std::slice::from_raw_parts(text.data.cast::<u8>(), text.length) };
        if let Err(error) = sink.out.write_all(bytes) {
            sink.error = Some(error);
        }
    }
    let mut sink = Sink { out, error: None };
    // SAFETY: a live op and flags; `write_chunk` writes to `sink`.
    unsafe { blueprintOperationPrintBuffered(op.to_raw(), flags.to_raw(), Some(write_chunk), (&raw mut sink).cast()) };
    sink.error.map_or(Ok(()), Err)
}

#[must_use]
pub fn is_same_type(a: Type, b: Type) -> bool {
    a == b && a.context() == b.context()
}

/// A string-list attribute of an op by name.
#[must_use]
pub fn attr_string_list(op: OperationRef, name: &str) -> Option<Vec<String>> {
    string_list(op.attribute(name).ok()?)
}

/// An op's attributes read once. Each `op.attribute(name)` is a search
/// through MLIR's dictionary with string compares; a pass that reads many
/// attributes of an op reads them from here instead.
pub struct Attrs<'c> {
    entries: Vec<(&'c [u8], Attribute<'c>)>,
}

/// The attributes of `op` (`mlirOperationGetAttribute(op, i)` for each
/// `i`), read in one call.
///
/// # Safety
/// `op` is live; the slice is valid until its attributes change.
#[must_use]
pub unsafe fn named_attributes<'a>(op: mlir_sys::MlirOperation) -> &'a [mlir_sys::MlirNamedAttribute] {
    let mut count: isize = 0;
    // SAFETY: a live op (the caller's promise).
    let data = unsafe { blueprintOperationGetAttributes(op, &mut count) };
    if data.is_null() || count <= 0 {
        return &[];
    }
    // SAFETY: MLIR's array of `count` attributes of the op.
    unsafe { std::slice::from_raw_parts(data, count as usize) }
}

extern "C" {
    fn blueprintOperationGetAttributes(op: mlir_sys::MlirOperation, count: *mut isize) -> *const mlir_sys::MlirNamedAttribute;
}

impl<'c> Attrs<'c> {
    #[must_use]
    pub fn of(op: OperationRef<'c, '_>) -> Self {
        // SAFETY: a live op; names and attributes live as long as its
        // context, and nothing changes them while this is read.
        let entries = unsafe { named_attributes(op.to_raw()) }
            .iter()
            .map(|&named| unsafe { (string_ref_bytes(mlir_sys::mlirIdentifierStr(named.name)), Attribute::from_raw(named.attribute)) })
            .collect();
        Self { entries }
    }

    #[must_use]
    pub fn get(&self, name: &str) -> Option<Attribute<'c>> {
        let name = name.as_bytes();
        // Length and first byte rule out most names without a compare call.
        self.entries.iter().find(|(n, _)| n.len() == name.len() && n.first() == name.first() && *n == name).map(|(_, a)| *a)
    }

    #[must_use]
    pub fn int(&self, name: &str) -> Option<i64> {
        int_value(self.get(name)?)
    }

    /// A non-negative integer attribute.
    #[must_use]
    pub fn u64(&self, name: &str) -> Option<u64> {
        self.int(name).and_then(|v| u64::try_from(v).ok())
    }

    /// A count: 0 when absent or negative.
    #[must_use]
    pub fn count(&self, name: &str) -> u64 {
        self.u64(name).unwrap_or(0)
    }

    #[must_use]
    pub fn str(&self, name: &str) -> Option<&'c str> {
        string_value(self.get(name)?)
    }

    #[must_use]
    pub fn enumerated<E: crate::ir::ods::OdsEnum>(&self, name: &str) -> Option<E> {
        E::from_value(self.int(name)?)
    }

    #[must_use]
    pub fn i64_array(&self, name: &str) -> Option<Vec<i64>> {
        i64_array_value(self.get(name)?)
    }

    #[must_use]
    pub fn symbol(&self, name: &str) -> Option<&'c str> {
        symbol_value(self.get(name)?)
    }

    #[must_use]
    pub fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
}

/// An attribute name uniqued in one context: an op's attribute of that
/// name is found by comparing handles, with no string compares (what
/// `op.attribute(name)` does for every attribute it passes; when the
/// attribute is absent it also allocates its error).
#[derive(Clone, Copy)]
pub struct AttrName(mlir_sys::MlirIdentifier);

impl AttrName {
    /// `name` in the context of `op`.
    #[must_use]
    pub fn new(op: OperationRef, name: &str) -> Self {
        let text = mlir_sys::MlirStringRef { data: name.as_ptr().cast(), length: name.len() };
        // SAFETY: a live op's context; the identifier lives as long as it.
        Self(unsafe { mlir_sys::mlirIdentifierGet(mlir_sys::mlirOperationGetContext(op.to_raw()), text) })
    }

    /// The attribute of this name of `op` (an op of the same context).
    #[must_use]
    pub fn of<'c>(self, op: OperationRef<'c, '_>) -> Option<Attribute<'c>> {
        // SAFETY: a live op; its attributes live as long as its context.
        unsafe { named_attributes(op.to_raw()) }
            .iter()
            .find(|named| named.name.ptr == self.0.ptr)
            .map(|named| unsafe { Attribute::from_raw(named.attribute) })
    }

    /// Whether `name` (an attribute's name handle) is this name.
    #[must_use]
    pub fn is(self, name: mlir_sys::MlirIdentifier) -> bool {
        name.ptr == self.0.ptr
    }

    /// Whether `op` has an attribute of this name.
    #[must_use]
    pub fn on(self, op: OperationRef) -> bool {
        self.of(op).is_some()
    }
}

/// The kind of each op of `ops`, each distinct op name looked up once
/// (ops are many, their names few).
#[must_use]
pub fn kinds_of(ops: &[OperationRef]) -> Vec<Option<crate::ir::ods::OpKind>> {
    let mut memo = KindMemo::default();
    ops.iter().map(|op| memo.of(*op)).collect()
}

/// [`crate::ir::ods::OpKind::of`] by the op name's uniqued address, for one
/// reader of one module (while it lives, an address names one op name):
/// a few slots by address, then a map.
pub struct KindMemo {
    slots: [(usize, Option<crate::ir::ods::OpKind>); KindMemo::SLOTS],
    by_name: PtrMap<Option<crate::ir::ods::OpKind>>,
}

impl Default for KindMemo {
    fn default() -> Self {
        Self { slots: [(0, None); Self::SLOTS], by_name: PtrMap::default() }
    }
}

impl KindMemo {
    const SLOTS: usize = 32;

    #[inline]
    pub fn of(&mut self, op: OperationRef) -> Option<crate::ir::ods::OpKind> {
        // SAFETY: a live op.
        let name = unsafe { mlir_sys::mlirOperationGetName(op.to_raw()) }.ptr as usize;
        let slot = (name.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 59) % Self::SLOTS;
        let (known, kind) = self.slots[slot];
        if known == name && name != 0 {
            return kind;
        }
        self.miss(op, name, slot)
    }

    #[inline(never)]
    fn miss(&mut self, op: OperationRef, name: usize, slot: usize) -> Option<crate::ir::ods::OpKind> {
        let kind = *self.by_name.entry(name).or_insert_with(|| crate::ir::ods::OpKind::of(op));
        self.slots[slot] = (name, kind);
        kind
    }
}

/// Which kinds are ops of `dialect`, indexed by kind: a look-up per op
/// instead of a compare of names, for readers that ask it of every op.
#[must_use]
pub fn kinds_in(dialect: &str) -> Vec<bool> {
    let mut table = vec![false; crate::ir::ods::OpKind::ALL.len()];
    for kind in crate::ir::ods::OpKind::ALL {
        table[kind as usize] = kind.dialect() == dialect;
    }
    table
}

/// A fact about each attribute name, by the name's uniqued address, for
/// rules that read every attribute of every op. Ops of one kind (a
/// `group`) list the same names in the same (sorted) order, so a name is
/// first compared with the one at its position in the group's last op.
pub struct NameFacts<T> {
    by_name: FxMap<(usize, usize), T>,
    last: Vec<Vec<(usize, T)>>,
}

impl<T> Default for NameFacts<T> {
    fn default() -> Self {
        Self { by_name: FxMap::default(), last: Vec::new() }
    }
}

impl<T: Copy> NameFacts<T> {
    /// The facts of the names of ops of `group`.
    #[inline]
    pub fn group(&mut self, group: usize) -> NameGroup<'_, T> {
        if self.last.len() <= group {
            self.last.resize_with(group + 1, Vec::new);
        }
        NameGroup { group, last: &mut self.last[group], by_name: &mut self.by_name }
    }
}

/// [`NameFacts`] of one group, borrowed for the attributes of one op.
pub struct NameGroup<'m, T> {
    group: usize,
    last: &'m mut Vec<(usize, T)>,
    by_name: &'m mut FxMap<(usize, usize), T>,
}

impl<T: Copy> NameGroup<'_, T> {
    /// The fact of the attribute `name` at `position`; `fact` computes it
    /// from the name's text the first time.
    #[inline]
    pub fn get(&mut self, position: usize, name: mlir_sys::MlirIdentifier, fact: impl FnOnce(&str) -> T) -> T {
        let key = name.ptr as usize;
        if let Some(&(known, value)) = self.last.get(position) {
            if known == key {
                return value;
            }
        }
        self.miss(position, name, fact)
    }

    #[inline(never)]
    fn miss(&mut self, position: usize, name: mlir_sys::MlirIdentifier, fact: impl FnOnce(&str) -> T) -> T {
        let key = name.ptr as usize;
        // SAFETY: a live identifier of the op's context.
        let value = *self
            .by_name
            .entry((self.group, key))
            .or_insert_with(|| fact(identifier_str(unsafe { melior::ir::Identifier::from_raw(name) })));
        if position < self.last.len() {
            self.last[position] = (key, value);
        } else if position == self.last.len() {
            self.last.push((key, value));
        }
        value
    }
}

/// What an attribute is, as the readers that visit every attribute ask:
/// one type-id read instead of one C API call per kind asked about.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum AttrClass {
    String,
    Array,
    Dictionary,
    Other,
}

/// The type ids of the attribute classes [`AttrClass`] tells apart.
#[derive(Clone, Copy)]
pub struct AttrClasses {
    string: *const std::ffi::c_void,
    array: *const std::ffi::c_void,
    dictionary: *const std::ffi::c_void,
}

impl AttrClasses {
    #[must_use]
    pub fn new() -> Self {
        // SAFETY: static type ids.
        unsafe {
            Self {
                string: mlir_sys::mlirStringAttrGetTypeID().ptr,
                array: mlir_sys::mlirArrayAttrGetTypeID().ptr,
                dictionary: mlir_sys::mlirDictionaryAttrGetTypeID().ptr,
            }
        }
    }

    #[must_use]
    pub fn of(&self, attribute: mlir_sys::MlirAttribute) -> AttrClass {
        // SAFETY: a live attribute.
        let id = unsafe { mlir_sys::mlirAttributeGetTypeID(attribute) }.ptr;
        if id == self.string {
            AttrClass::String
        } else if id == self.array {
            AttrClass::Array
        } else if id == self.dictionary {
            AttrClass::Dictionary
        } else {
            AttrClass::Other
        }
    }
}

impl Default for AttrClasses {
    fn default() -> Self {
        Self::new()
    }
}

extern "C" {
    fn blueprintCollectOps(
        root: mlir_sys::MlirOperation,
        sink: Option<unsafe extern "C" fn(*mut std::ffi::c_void, *const mlir_sys::MlirOperation, isize)>,
        data: *mut std::ffi::c_void,
    );
}

#[cfg(test)]
mod tests {
    use melior::ir::operation::OperationLike;

    use super::*;
    use crate::ir::{context::create_context, diagnostics::DiagnosticSink, parse::parse_module};

    #[test]
    fn ops_are_collected_in_the_walk_order() {
        let context = create_context();
        let sink = DiagnosticSink::attach(&context);
        let text = "func.func @f(%a: i32) -> i32 {\n  %b = arith.addi %a, %a : i32\n  return %b : i32\n}\n\
                    func.func @g() {\n  return\n}\n";
        let module = parse_module(&context, &sink, text.as_bytes(), "test").unwrap_or_else(|| panic!("parses: {:?}", sink.take()));
        let op = module.as_operation();
        let names = |ops: &[OperationRef]| ops.iter().map(|o| name_of(*o)).collect::<Vec<_>>();
        let collected = collect_ops(op);
        assert_eq!(names(&collected), ["builtin.module", "func.func", "arith.addi", "func.return", "func.func", "func.return"]);
        assert_eq!(collected, collect_ops_by_walk(op));
        // A leaf alone.
        let leaf = collected[2];
        assert_eq!(collect_ops(leaf), [leaf]);
        // Names by handle find what names by text find.
        let add = AttrName::new(leaf, "overflowFlags");
        assert_eq!(add.of(leaf).is_some(), leaf.attribute("overflowFlags").is_ok());
        assert!(!AttrName::new(leaf, "absent").on(leaf));
        let function = collected[1];
        assert_eq!(AttrName::new(function, "sym_name").of(function), function.attribute("sym_name").ok());
        assert_eq!(kinds_of(&collected), vec![None; collected.len()]);
    }

    #[test]
    fn text_reads_ascii_and_utf8_and_marks_the_rest() {
        assert_eq!(crate::ir::raw::text_of(b"attn.qkv"), "attn.qkv");
        assert_eq!(crate::ir::raw::text_of("é".as_bytes()), "é");
        assert_eq!(crate::ir::raw::text_of(b"\xff"), "<invalid utf-8>");
        assert_eq!(dialect_of("plan.compute_task"), "plan");
        assert_eq!(dialect_of("module"), "module");
    }
}
