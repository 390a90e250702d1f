//! Handles MLIR would otherwise look up by string or by value for every op
//! a pass builds: attribute names, op names, integer attributes and the
//! few types Blueprint spells. Each costs a hash and a probe of MLIR's
//! uniquer (a few hundred instructions); a plan of 400k tasks makes ten
//! million of them.
//!
//! The table lives for one [`Scope`]: every `external_pass!` opens one on
//! its context, and it is dropped when the scope ends, so no handle
//! outlives what it was made for. Outside a scope (or for another context
//! than the open one) [`crate::dialects::Builder`] asks MLIR directly: the
//! results are the same handles.

use std::{cell::RefCell, ffi::c_void, hash::Hash};

use mlir_sys::{MlirAttribute, MlirContext, MlirIdentifier, MlirType};

use crate::ir::FxMap;

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
    /// Attribute names of the generated builders.
    identifiers: FxMap<StaticKey, MlirIdentifier>,
    operation_names: FxMap<StaticKey, *const c_void>,
    /// Integer attributes by (signless width, value).
    integers: FxMap<(u32, i64), MlirAttribute>,
    types: FxMap<StaticKey, MlirType>,
}

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
                    *slot = Some(Table { context: key, depth: 1, ..Table::default() });
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

/// `make()` once per `key` of the map `map` picks in the open table of
/// `context`; every time without one.
fn remembered<K: Hash + Eq, V: Copy>(context: MlirContext, map: fn(&mut Table) -> &mut FxMap<K, V>, key: K, make: impl FnOnce() -> V) -> V {
    TABLE.with(|cell| {
        let Ok(mut slot) = cell.try_borrow_mut() else { return make() };
        match slot.as_mut() {
            Some(table) if table.context == context.ptr as usize => *map(table).entry(key).or_insert_with(make),
            _ => make(),
        }
    })
}

pub(crate) fn static_identifier(context: MlirContext, name: &'static str, make: impl FnOnce() -> MlirIdentifier) -> MlirIdentifier {
    remembered(context, |t| &mut t.identifiers, static_key(name), make)
}

pub(crate) fn operation_name(context: MlirContext, name: &'static str, make: impl FnOnce() -> *const c_void) -> *const c_void {
    remembered(context, |t| &mut t.operation_names, static_key(name), make)
}

pub(crate) fn integer(context: MlirContext, width: u32, value: i64, make: impl FnOnce() -> MlirAttribute) -> MlirAttribute {
    remembered(context, |t| &mut t.integers, (width, value), make)
}

pub(crate) fn known_type(context: MlirContext, spelling: &'static str, make: impl FnOnce() -> MlirType) -> MlirType {
    remembered(context, |t| &mut t.types, static_key(spelling), make)
}

#[cfg(test)]
mod tests {
    use melior::ir::{AttributeLike, TypeLike};

    use super::*;
    use crate::{context::create_context, dialects::Builder};

    fn open_context() -> Option<usize> {
        TABLE.with(|cell| cell.borrow().as_ref().map(|t| t.context))
    }

    #[test]
    fn handles_are_mlirs_own_and_stay_in_their_context() {
        let (a, b) = (create_context(), create_context());
        let (builder_a, builder_b) = (Builder::new(&a), Builder::new(&b));
        let outside = (builder_a.identifier("ops").to_raw().ptr, builder_a.count(7).to_raw().ptr, builder_a.plan_token().to_raw().ptr);
        {
            let _scope = Scope::begin(a.to_raw());
            assert_eq!(open_context(), Some(a.to_raw().ptr as usize));
            for _ in 0..2 {
                let inside =
                    (builder_a.identifier("ops").to_raw().ptr, builder_a.count(7).to_raw().ptr, builder_a.plan_token().to_raw().ptr);
                assert_eq!(inside, outside);
            }
            // The other context's builder is not served from this table.
            let seven = builder_b.count(7);
            assert_eq!(unsafe { mlir_sys::mlirAttributeGetContext(seven.to_raw()) }.ptr, b.to_raw().ptr);
            assert_ne!(seven.to_raw().ptr, outside.1);
            // Nor does a scope on it replace the open one.
            let _other = Scope::begin(b.to_raw());
            assert_eq!(open_context(), Some(a.to_raw().ptr as usize));
            // Re-entering the open context nests.
            drop(Scope::begin(a.to_raw()));
            assert_eq!(open_context(), Some(a.to_raw().ptr as usize));
        }
        // Gone with its scope: nothing outlives the pass that made it.
        assert_eq!(open_context(), None);
        assert!(builder_a.count(7).is_integer());
    }
}
