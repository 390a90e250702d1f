//! Handles MLIR would otherwise look up by string or by value for every op
//! a pass builds: attribute names, op names, integer attributes and the
//! few types Blueprint spells. Each costs a hash and a probe of MLIR's
//! uniquer (a few hundred instructions); a plan of 400k tasks makes ten
//! million of them.
//!
//! The table lives for one [`Scope`]: a pass (every `external_pass!`) or
//! an import opens one on its context, and it is dropped when the scope
//! ends, so no handle outlives what it was made for. Outside a scope (or
//! for another context than the open one) [`crate::dialects::Builder`]
//! asks MLIR directly: the results are the same handles.

use std::{cell::RefCell, collections::HashMap, ffi::c_void, hash::BuildHasherDefault};

use mlir_sys::{MlirAttribute, MlirContext, MlirIdentifier, MlirType};

/// FxHash (rustc's): short keys, no DoS concern inside one pass.
#[derive(Default)]
pub struct FxHasher(u64);

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl std::hash::Hasher for FxHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        for &b in chunks.remainder() {
            self.add(u64::from(b));
        }
    }

    fn write_u8(&mut self, value: u8) {
        self.add(u64::from(value));
    }

    fn write_u64(&mut self, value: u64) {
        self.add(value);
    }

    fn write_usize(&mut self, value: usize) {
        self.add(value as u64);
    }
}

type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

#[derive(Default)]
struct Table {
    context: usize,
    depth: usize,
    identifiers: FxMap<Box<str>, MlirIdentifier>,
    /// Names spelled in the program (the generated builders'), by address:
    /// static memory never holds another string.
    static_identifiers: FxMap<(usize, usize), MlirIdentifier>,
    /// Op names, by address (all spelled in the program).
    operation_names: FxMap<(usize, usize), *const c_void>,
    /// Integer attributes by (signless width, value).
    integers: FxMap<(u32, i64), MlirAttribute>,
    /// Types by their spelling's address.
    types: FxMap<(usize, usize), MlirType>,
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

/// `make()` once per key in the open table of `context`; every time
/// without one.
fn remembered<T: Copy>(
    context: MlirContext,
    lookup: impl FnOnce(&mut Table) -> Option<T>,
    make: impl FnOnce() -> T,
    store: impl FnOnce(&mut Table, T),
) -> T {
    TABLE.with(|cell| {
        let Ok(mut slot) = cell.try_borrow_mut() else { return make() };
        match slot.as_mut() {
            Some(table) if table.context == context.ptr as usize => {
                if let Some(found) = lookup(table) {
                    return found;
                }
                let made = make();
                store(table, made);
                made
            }
            _ => make(),
        }
    })
}

pub(crate) fn identifier(context: MlirContext, name: &str, make: impl FnOnce() -> MlirIdentifier) -> MlirIdentifier {
    remembered(
        context,
        |t| t.identifiers.get(name).copied(),
        make,
        |t, v| {
            t.identifiers.insert(name.into(), v);
        },
    )
}

pub(crate) fn static_identifier(context: MlirContext, name: &'static str, make: impl FnOnce() -> MlirIdentifier) -> MlirIdentifier {
    let key = (name.as_ptr() as usize, name.len());
    remembered(
        context,
        |t| t.static_identifiers.get(&key).copied(),
        make,
        |t, v| {
            t.static_identifiers.insert(key, v);
        },
    )
}

pub(crate) fn operation_name(context: MlirContext, name: &'static str, make: impl FnOnce() -> *const c_void) -> *const c_void {
    let key = (name.as_ptr() as usize, name.len());
    remembered(
        context,
        |t| t.operation_names.get(&key).copied(),
        make,
        |t, v| {
            t.operation_names.insert(key, v);
        },
    )
}

pub(crate) fn integer(context: MlirContext, width: u32, value: i64, make: impl FnOnce() -> MlirAttribute) -> MlirAttribute {
    let key = (width, value);
    remembered(
        context,
        |t| t.integers.get(&key).copied(),
        make,
        |t, v| {
            t.integers.insert(key, v);
        },
    )
}

pub(crate) fn known_type(context: MlirContext, spelling: &'static str, make: impl FnOnce() -> MlirType) -> MlirType {
    let key = (spelling.as_ptr() as usize, spelling.len());
    remembered(
        context,
        |t| t.types.get(&key).copied(),
        make,
        |t, v| {
            t.types.insert(key, v);
        },
    )
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
