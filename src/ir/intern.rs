//! Handles MLIR would otherwise look up by string or by value for every op
//! a pass builds: attribute names, op names, integer attributes and the
//! few types Blueprint spells. Each costs a hash and a probe of MLIR's
//! uniquer (a few hundred instructions); a plan of 400k tasks makes ten
//! million of them.
//!
//! The table lives for one [`Scope`]: every `external_pass!` opens one on
//! its context, and it is dropped when the scope ends, so no handle
//! outlives what it was made for. Outside a scope (or for another context
//! than the open one) [`crate::dialect::builder::Builder`] asks MLIR directly: the
//! results are the same handles.

use std::{cell::RefCell, ffi::c_void, hash::Hash};

use mlir_sys::{MlirAttribute, MlirContext, MlirIdentifier, MlirType};

use crate::ir::raw::FxMap;

/// A string spelled in the program, by address: static memory never holds
/// another string, so no hashing or comparing of its bytes.
type StaticKey = (usize, usize);

fn static_key(text: &'static str) -> StaticKey {
    (text.as_ptr() as usize, text.len())
}

#[derive(Default)]
struct Table {
    context: usize,
    depth: usize,
    /// Attribute names of the generated builders, all of one op's at once
    /// (keyed by the address of its static list).
    attribute_names: FxMap<usize, Box<[MlirIdentifier]>>,
    operation_names: FxMap<StaticKey, *const c_void>,
    /// Integer attributes by (signless width, value).
    integers: FxMap<(u32, i64), MlirAttribute>,
    /// The integers asked for most recently, direct-mapped by value: an op
    /// repeats the indices and facts of the ops before it, and a slot
    /// compare costs far less than a hash-map probe.
    recent_integers: Vec<Option<(u32, i64, MlirAttribute)>>,
    types: FxMap<StaticKey, MlirType>,
    /// The string attribute made last: a task's id is also its lineage.
    last_string: Option<MlirAttribute>,
}

/// Slots of [`Table::recent_integers`] (a power of two).
const RECENT_INTEGERS: usize = 1 << 10;

thread_local! {
    static TABLE: RefCell<Option<Table>> = const { RefCell::new(None) };
}

/// While alive, handles made in its context on this thread are remembered.
#[must_use = "the table lives as long as the scope"]
pub struct Scope {
    active: bool,
}

impl Scope {
    /// Opens (or re-enters) the table of `context`. A scope for another
    /// context while one is open remembers nothing.
    pub fn begin(context: MlirContext) -> Self {
        let key = context.ptr as usize;
        let active = TABLE.with(|cell| {
            let Ok(mut slot) = cell.try_borrow_mut() else { return false };
            match slot.as_mut() {
                Some(table) if table.context == key => {
                    table.depth += 1;
                    true
                }
                Some(_) => false,
                None => {
                    *slot = Some(Table { context: key, depth: 1, recent_integers: vec![None; RECENT_INTEGERS], ..Table::default() });
                    true
                }
            }
        });
        Self { active }
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        if !self.active {
            return;
        }
        TABLE.with(|cell| {
            if let Ok(mut slot) = cell.try_borrow_mut() {
                if let Some(table) = slot.as_mut() {
                    table.depth -= 1;
                    if table.depth == 0 {
                        *slot = None;
                    }
                }
            }
        });
    }
}

/// The open table of one context, borrowed once for everything one op
/// needs (or none: outside a scope, or while borrowed further up).
pub(crate) struct Interner<'t> {
    table: Option<&'t mut Table>,
}

impl Interner<'_> {
    /// Integer attribute of (signless `width`, `value`): `make()` once.
    pub(crate) fn integer(&mut self, width: u32, value: i64, make: impl FnOnce() -> MlirAttribute) -> MlirAttribute {
        let Some(table) = self.table.as_deref_mut() else { return make() };
        // Fibonacci hashing of the value (and width) picks the slot.
        let slot = ((value as u64 ^ u64::from(width)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54) as usize & (RECENT_INTEGERS - 1);
        if let Some(Some((w, v, attribute))) = table.recent_integers.get(slot) {
            if (*w, *v) == (width, value) {
                return *attribute;
            }
        }
        let attribute = *table.integers.entry((width, value)).or_insert_with(make);
        if let Some(entry) = table.recent_integers.get_mut(slot) {
            *entry = Some((width, value, attribute));
        }
        attribute
    }

    /// The string attribute of `text`: the one made last if it holds the
    /// same text, else `make()`.
    pub(crate) fn string(&mut self, text: &str, make: impl FnOnce() -> MlirAttribute) -> MlirAttribute {
        let Some(table) = self.table.as_deref_mut() else { return make() };
        if let Some(last) = table.last_string {
            // SAFETY: a string attribute of the open context.
            if unsafe { crate::ir::raw::string_ref_bytes(mlir_sys::mlirStringAttrGetValue(last)) } == text.as_bytes() {
                return last;
            }
        }
        let made = make();
        table.last_string = Some(made);
        made
    }
}

/// `f` with the open table of `context` (if any).
fn with_table<R>(context: MlirContext, f: impl FnOnce(&mut Interner) -> R) -> R {
    TABLE.with(|cell| {
        let mut slot = cell.try_borrow_mut().ok();
        let table = slot.as_mut().and_then(|s| s.as_mut()).filter(|t| t.context == context.ptr as usize);
        f(&mut Interner { table })
    })
}

/// `make()` once per `key` of the map `map` picks in the open table of
/// `context`; every time without one.
fn remembered<K: Hash + Eq, V: Copy>(context: MlirContext, map: fn(&mut Table) -> &mut FxMap<K, V>, key: K, make: impl FnOnce() -> V) -> V {
    with_table(context, |interner| match interner.table.as_deref_mut() {
        Some(table) => *map(table).entry(key).or_insert_with(make),
        None => make(),
    })
}

/// The identifiers of an op's attribute names (`make` of each once per
/// table), then `f` with them and the table: one lookup and one borrow
/// per op built rather than one per attribute.
pub(crate) fn with_op_attributes<const K: usize, R>(
    context: MlirContext,
    names: &'static [&'static str; K],
    make: impl Fn(&'static str) -> MlirIdentifier,
    f: impl FnOnce(&[MlirIdentifier; K], &mut Interner) -> R,
) -> R {
    with_table(context, |interner| {
        let identifiers = match interner.table.as_deref_mut() {
            Some(table) => {
                let known = table.attribute_names.entry(names.as_ptr() as usize).or_insert_with(|| names.map(&make).into());
                std::array::from_fn(|i| known[i])
            }
            None => names.map(&make),
        };
        f(&identifiers, interner)
    })
}

pub(crate) fn operation_name(context: MlirContext, name: &'static str, make: impl FnOnce() -> *const c_void) -> *const c_void {
    remembered(context, |t| &mut t.operation_names, static_key(name), make)
}

pub(crate) fn integer(context: MlirContext, width: u32, value: i64, make: impl FnOnce() -> MlirAttribute) -> MlirAttribute {
    with_table(context, |interner| interner.integer(width, value, make))
}

/// The string attribute of `text` (see [`Interner::string`]).
pub(crate) fn string(context: MlirContext, text: &str, make: impl FnOnce() -> MlirAttribute) -> MlirAttribute {
    with_table(context, |interner| interner.string(text, make))
}

/// Makes `attribute` (a string attribute of `context`) the one made last.
pub(crate) fn reuse_string(context: MlirContext, attribute: MlirAttribute) {
    with_table(context, |interner| {
        if let Some(table) = interner.table.as_deref_mut() {
            table.last_string = Some(attribute);
        }
    });
}

pub(crate) fn known_type(context: MlirContext, spelling: &'static str, make: impl FnOnce() -> MlirType) -> MlirType {
    remembered(context, |t| &mut t.types, static_key(spelling), make)
}

/// The context whose table is open, if any (for the builder's tests).
#[cfg(test)]
pub(crate) fn open_context() -> Option<usize> {
    TABLE.with(|cell| cell.borrow().as_ref().map(|t| t.context))
}
