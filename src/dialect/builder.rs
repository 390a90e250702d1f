//! Building IR of Blueprint's dialects: one typed builder per op, generated
//! by `build.rs` from the same ODS as the C++ (`dialect::dist::Compute`,
//! `dialect::plan::Buffer`, ...; each dialect's module includes its own),
//! and [`Builder`], which makes the
//! attributes and types they need. Passes build IR with these, never as
//! text: the compiler checks every operand and attribute name, and closed
//! choices are the ODS enums ([`crate::ir::ods::Phase`], ...).

use std::marker::PhantomData;

use melior::{
    ir::{operation::OperationBuilder, Attribute, AttributeLike, Identifier, Location, Operation, OperationRef, Type, TypeLike, Value},
    Context,
};
use thiserror::Error;

/// MLIR refused to create an op from a builder (its result types could not
/// be inferred from the operands given).
#[derive(Debug, Clone, Error, PartialEq, Eq)]
#[error("internal error: cannot create '{op}' from the values given")]
pub struct BuildError {
    pub op: &'static str,
}

/// Passes report failures as located messages.
impl From<BuildError> for String {
    fn from(error: BuildError) -> Self {
        error.to_string()
    }
}

/// Makes attributes and types in one context; cheap to copy.
#[derive(Clone, Copy)]
pub struct Builder<'c> {
    context: mlir_sys::MlirContext,
    _context: PhantomData<&'c Context>,
}

fn string_ref(text: &str) -> mlir_sys::MlirStringRef {
    mlir_sys::MlirStringRef { data: text.as_ptr().cast(), length: text.len() }
}

impl<'c> Builder<'c> {
    #[must_use]
    pub fn new(context: &'c Context) -> Self {
        Self { context: context.to_raw(), _context: PhantomData }
    }

    /// A builder in the context of a live op (passes get ops, not contexts).
    #[must_use]
    pub fn of(op: OperationRef<'c, '_>) -> Self {
        // SAFETY: a live op has a live context, which outlives 'c.
        Self { context: unsafe { mlir_sys::mlirOperationGetContext(op.to_raw()) }, _context: PhantomData }
    }

    /// The raw context, for C API calls.
    #[must_use]
    pub fn raw_context(&self) -> mlir_sys::MlirContext {
        self.context
    }

    #[must_use]
    pub fn identifier(&self, name: &str) -> Identifier<'c> {
        // SAFETY: a live context; MLIR copies the string.
        unsafe { Identifier::from_raw(mlir_sys::mlirIdentifierGet(self.context, string_ref(name))) }
    }

    #[must_use]
    pub fn string(&self, text: &str) -> Attribute<'c> {
        let raw = crate::ir::intern::string(self.context, text, || self.new_string(text));
        // SAFETY: made in this context.
        unsafe { Attribute::from_raw(raw) }
    }

    /// Lets the next [`Self::string`] of the same text return `attribute`
    /// (a string attribute already at hand, such as the source op's id)
    /// without asking MLIR's uniquer; no effect outside a pass's scope.
    pub fn reuse_string(&self, attribute: Attribute<'c>) {
        if attribute.is_string() {
            crate::ir::intern::reuse_string(self.context, attribute.to_raw());
        }
    }

    #[must_use]
    pub fn symbol(&self, name: &str) -> Attribute<'c> {
        // SAFETY: as above.
        unsafe { Attribute::from_raw(mlir_sys::mlirFlatSymbolRefAttrGet(self.context, string_ref(name))) }
    }

    /// A signless integer attribute straight from MLIR (no table).
    fn new_integer(&self, width: u32, value: i64) -> mlir_sys::MlirAttribute {
        // SAFETY: a live context.
        unsafe { mlir_sys::mlirIntegerAttrGet(self.integer_type(width), value) }
    }

    /// A string attribute straight from MLIR (no table).
    fn new_string(&self, text: &str) -> mlir_sys::MlirAttribute {
        // SAFETY: a live context; MLIR copies the string.
        unsafe { mlir_sys::mlirStringAttrGet(self.context, string_ref(text)) }
    }

    fn integer_type(&self, width: u32) -> mlir_sys::MlirType {
        // SAFETY: a live context.
        unsafe { mlir_sys::mlirIntegerTypeGet(self.context, width) }
    }

    #[must_use]
    pub fn i64(&self, value: i64) -> Attribute<'c> {
        self.integer(64, value)
    }

    fn integer(&self, width: u32, value: i64) -> Attribute<'c> {
        let raw = crate::ir::intern::integer(self.context, width, value, || self.new_integer(width, value));
        // SAFETY: made in this context.
        unsafe { Attribute::from_raw(raw) }
    }

    /// A non-negative count. Validation bounds every count Blueprint
    /// derives far below 2^63; a larger one saturates.
    #[must_use]
    pub fn count(&self, value: u64) -> Attribute<'c> {
        self.i64(i64::try_from(value).unwrap_or(i64::MAX))
    }

    #[must_use]
    pub fn f64(&self, value: f64) -> Attribute<'c> {
        // SAFETY: as above.
        unsafe { Attribute::from_raw(mlir_sys::mlirFloatAttrDoubleGet(self.context, mlir_sys::mlirF64TypeGet(self.context), value)) }
    }

    /// An ODS enum case (`i32`, as `I32EnumAttr` stores it).
    #[must_use]
    pub fn enum_case(&self, value: i64) -> Attribute<'c> {
        self.integer(32, value)
    }

    #[must_use]
    pub fn unit(&self) -> Attribute<'c> {
        // SAFETY: as above.
        unsafe { Attribute::from_raw(mlir_sys::mlirUnitAttrGet(self.context)) }
    }

    #[must_use]
    pub fn i64_array(&self, values: &[i64]) -> Attribute<'c> {
        // SAFETY: as above; MLIR copies the elements.
        unsafe { Attribute::from_raw(mlir_sys::mlirDenseI64ArrayGet(self.context, values.len() as isize, values.as_ptr())) }
    }

    #[must_use]
    pub fn i32_array(&self, values: &[i32]) -> Attribute<'c> {
        // SAFETY: as above.
        unsafe { Attribute::from_raw(mlir_sys::mlirDenseI32ArrayGet(self.context, values.len() as isize, values.as_ptr())) }
    }

    #[must_use]
    pub fn array(&self, elements: &[Attribute<'c>]) -> Attribute<'c> {
        let raw: Vec<mlir_sys::MlirAttribute> = elements.iter().map(|a| a.to_raw()).collect();
        // SAFETY: as above; MLIR copies the element handles.
        unsafe { Attribute::from_raw(mlir_sys::mlirArrayAttrGet(self.context, raw.len() as isize, raw.as_ptr())) }
    }

    /// An array of strings (`["dp", "pp", "tp"]`).
    #[must_use]
    pub fn strings<S: AsRef<str>>(&self, items: &[S]) -> Attribute<'c> {
        let elements: Vec<Attribute<'c>> = items.iter().map(|s| self.string(s.as_ref())).collect();
        self.array(&elements)
    }

    /// A sharding: per tensor dimension, the mesh axes splitting it.
    #[must_use]
    pub fn split_axes<S: AsRef<str>>(&self, dims: &[Vec<S>]) -> Attribute<'c> {
        let elements: Vec<Attribute<'c>> = dims.iter().map(|axes| self.strings(axes)).collect();
        self.array(&elements)
    }

    /// A dictionary attribute.
    #[must_use]
    pub fn dictionary(&self, entries: &[(&str, Attribute<'c>)]) -> Attribute<'c> {
        let named: Vec<mlir_sys::MlirNamedAttribute> = entries
            .iter()
            .map(|(name, value)| mlir_sys::MlirNamedAttribute { name: self.identifier(name).to_raw(), attribute: value.to_raw() })
            .collect();
        // SAFETY: as above.
        unsafe { Attribute::from_raw(mlir_sys::mlirDictionaryAttrGet(self.context, named.len() as isize, named.as_ptr())) }
    }

    /// A type Blueprint spells itself (`!dist.token`, `f16`); `None` if it
    /// does not parse.
    #[must_use]
    pub fn parse_type(&self, spelling: &str) -> Option<Type<'c>> {
        // SAFETY: as above.
        let raw = unsafe { mlir_sys::mlirTypeParseGet(self.context, string_ref(spelling)) };
        (!raw.ptr.is_null()).then(|| unsafe { Type::from_raw(raw) })
    }

    /// `!dist.token`.
    #[must_use]
    pub fn dist_token(&self) -> Type<'c> {
        self.known_type("!dist.token")
    }

    /// `!dist.async_handle`.
    #[must_use]
    pub fn async_handle(&self) -> Type<'c> {
        self.known_type("!dist.async_handle")
    }

    /// `!plan.token`.
    #[must_use]
    pub fn plan_token(&self) -> Type<'c> {
        self.known_type("!plan.token")
    }

    #[must_use]
    pub fn index_type(&self) -> Type<'c> {
        // SAFETY: as above.
        unsafe { Type::from_raw(mlir_sys::mlirIndexTypeGet(self.context)) }
    }

    fn known_type(&self, spelling: &'static str) -> Type<'c> {
        let raw = crate::ir::intern::known_type(self.context, spelling, || match self.parse_type(spelling) {
            Some(ty) => ty.to_raw(),
            None => unreachable!("the context registers Blueprint's dialects, so '{spelling}' parses"),
        });
        // SAFETY: parsed in this context.
        unsafe { Type::from_raw(raw) }
    }

    /// A ranked tensor type of static `shape` (`-1` for a dynamic dim).
    #[must_use]
    pub fn tensor(&self, shape: &[i64], element: Type<'c>) -> Type<'c> {
        let dims: Vec<i64> = shape.iter().map(|&d| if d < 0 { i64::MIN } else { d }).collect();
        // SAFETY: as above; a null encoding is no encoding.
        unsafe {
            Type::from_raw(mlir_sys::mlirRankedTensorTypeGet(
                dims.len() as isize,
                dims.as_ptr(),
                element.to_raw(),
                mlir_sys::mlirAttributeGetNull(),
            ))
        }
    }

    /// A location named `name` inside `parent`: generated ops carry the
    /// location of the op they came from, so diagnostics land in the
    /// user's file.
    #[must_use]
    pub fn named_location(&self, name: &str, parent: Location<'c>) -> Location<'c> {
        // SAFETY: as above.
        unsafe { Location::from_raw(mlir_sys::mlirLocationNameGet(self.context, string_ref(name), parent.to_raw())) }
    }

    /// `f` with the identifiers of an op's attribute names (in `names`'
    /// order) and a maker of its attribute values: the generated builders
    /// make all of one op's attributes in one borrow of the pass's table.
    pub fn with_attributes<const K: usize, R>(
        &self,
        names: &'static [&'static str; K],
        f: impl FnOnce(&[mlir_sys::MlirIdentifier; K], &mut AttributeMaker<'_, '_, 'c>) -> R,
    ) -> R {
        let context = self.context;
        crate::ir::intern::with_op_attributes(
            context,
            names,
            // SAFETY: a live context; MLIR copies the strings.
            |name| unsafe { mlir_sys::mlirIdentifierGet(context, string_ref(name)) },
            |identifiers, interner| f(identifiers, &mut AttributeMaker { b: *self, interner }),
        )
    }

    /// Creates the op `name` (one of Blueprint's or an upstream one)
    /// from its parts; `attributes` are in name order, each once (the
    /// generated builders emit them so).
    ///
    /// # Errors
    /// None today; the signature matches the builders'.
    pub fn create(
        &self,
        name: &'static str,
        location: Location<'c>,
        operands: &[Value<'c, '_>],
        attributes: &[mlir_sys::MlirNamedAttribute],
        results: &[Type<'c>],
        regions: Vec<melior::ir::Region<'c>>,
    ) -> Result<Operation<'c>, BuildError> {
        debug_assert!(
            attributes.windows(2).all(|w| unsafe {
                let (a, b) = (mlir_sys::mlirIdentifierStr(w[0].name), mlir_sys::mlirIdentifierStr(w[1].name));
                std::slice::from_raw_parts(a.data.cast::<u8>(), a.length) < std::slice::from_raw_parts(b.data.cast::<u8>(), b.length)
            }),
            "the attributes of '{name}' are not in strictly increasing name order"
        );
        // SAFETY: a live context; MLIR copies the name.
        let op_name =
            crate::ir::intern::operation_name(self.context, name, || unsafe { blueprintOperationNameGet(self.context, string_ref(name)) });
        let operands: Vec<mlir_sys::MlirValue> = operands.iter().map(melior::ir::ValueLike::to_raw).collect();
        let results: Vec<mlir_sys::MlirType> = results.iter().map(|t| t.to_raw()).collect();
        let mut regions: Vec<mlir_sys::MlirRegion> = regions.into_iter().map(melior::ir::Region::into_raw).collect();
        // SAFETY: every handle is of this context; the op takes over the
        // regions (released above), as mlirOperationCreate does.
        let raw = unsafe {
            blueprintOperationCreate(
                location.to_raw(),
                op_name,
                results.len() as isize,
                results.as_ptr(),
                operands.len() as isize,
                operands.as_ptr(),
                attributes.len() as isize,
                attributes.as_ptr(),
                regions.len() as isize,
                regions.as_mut_ptr(),
            )
        };
        if raw.ptr.is_null() {
            return Err(BuildError { op: name });
        }
        // SAFETY: a new op, owned by the caller.
        Ok(unsafe { Operation::from_raw(raw) })
    }
}

/// The attribute values of one op being built (see
/// [`Builder::with_attributes`]): integers and strings from the pass's
/// table, borrowed once; the rest as [`Builder`] makes them.
pub struct AttributeMaker<'m, 't, 'c> {
    b: Builder<'c>,
    interner: &'m mut crate::ir::intern::Interner<'t>,
}

impl<'c> AttributeMaker<'_, '_, 'c> {
    fn integer(&mut self, width: u32, value: i64) -> Attribute<'c> {
        let b = self.b;
        let raw = self.interner.integer(width, value, || b.new_integer(width, value));
        // SAFETY: made in this context.
        unsafe { Attribute::from_raw(raw) }
    }

    #[must_use]
    pub fn i64(&mut self, value: i64) -> Attribute<'c> {
        self.integer(64, value)
    }

    /// As [`Builder::count`].
    #[must_use]
    pub fn count(&mut self, value: u64) -> Attribute<'c> {
        self.i64(i64::try_from(value).unwrap_or(i64::MAX))
    }

    /// As [`Builder::enum_case`].
    #[must_use]
    pub fn enum_case(&mut self, value: i64) -> Attribute<'c> {
        self.integer(32, value)
    }

    /// As [`Builder::string`].
    #[must_use]
    pub fn string(&mut self, text: &str) -> Attribute<'c> {
        let b = self.b;
        let raw = self.interner.string(text, || b.new_string(text));
        // SAFETY: made in this context.
        unsafe { Attribute::from_raw(raw) }
    }

    #[must_use]
    pub fn symbol(&mut self, name: &str) -> Attribute<'c> {
        self.b.symbol(name)
    }

    #[must_use]
    pub fn f64(&mut self, value: f64) -> Attribute<'c> {
        self.b.f64(value)
    }

    #[must_use]
    pub fn unit(&mut self) -> Attribute<'c> {
        self.b.unit()
    }

    #[must_use]
    pub fn i64_array(&mut self, values: &[i64]) -> Attribute<'c> {
        self.b.i64_array(values)
    }

    #[must_use]
    pub fn i32_array(&mut self, values: &[i32]) -> Attribute<'c> {
        self.b.i32_array(values)
    }
}

/// One attribute of an op being built.
#[must_use]
pub fn named(name: mlir_sys::MlirIdentifier, value: Attribute) -> mlir_sys::MlirNamedAttribute {
    mlir_sys::MlirNamedAttribute { name, attribute: value.to_raw() }
}

extern "C" {
    fn blueprintOperationNameGet(context: mlir_sys::MlirContext, name: mlir_sys::MlirStringRef) -> *const std::ffi::c_void;
    #[allow(clippy::too_many_arguments)]
    fn blueprintOperationCreate(
        location: mlir_sys::MlirLocation,
        name: *const std::ffi::c_void,
        n_results: isize,
        results: *const mlir_sys::MlirType,
        n_operands: isize,
        operands: *const mlir_sys::MlirValue,
        n_attributes: isize,
        attributes: *const mlir_sys::MlirNamedAttribute,
        n_regions: isize,
        regions: *mut mlir_sys::MlirRegion,
    ) -> mlir_sys::MlirOperation;
}

impl<'c> Builder<'c> {
    #[must_use]
    pub fn function_type(&self, inputs: &[Type<'c>], results: &[Type<'c>]) -> Type<'c> {
        let inputs: Vec<mlir_sys::MlirType> = inputs.iter().map(|t| t.to_raw()).collect();
        let results: Vec<mlir_sys::MlirType> = results.iter().map(|t| t.to_raw()).collect();
        // SAFETY: a live context; MLIR copies the type handles.
        unsafe {
            Type::from_raw(mlir_sys::mlirFunctionTypeGet(
                self.context,
                inputs.len() as isize,
                inputs.as_ptr(),
                results.len() as isize,
                results.as_ptr(),
            ))
        }
    }

    #[must_use]
    pub fn type_attribute(&self, ty: Type<'c>) -> Attribute<'c> {
        // SAFETY: a live type.
        unsafe { Attribute::from_raw(mlir_sys::mlirTypeAttrGet(ty.to_raw())) }
    }

    /// `func.func @name(inputs) -> results` with an entry block whose
    /// arguments are the inputs (located at `location`).
    ///
    /// # Errors
    /// When MLIR cannot create the op.
    pub fn func(&self, name: &str, inputs: &[Type<'c>], results: &[Type<'c>], location: Location<'c>) -> Result<Operation<'c>, BuildError> {
        let block = melior::ir::Block::new(&inputs.iter().map(|t| (*t, location)).collect::<Vec<_>>());
        let region = melior::ir::Region::new();
        melior::ir::RegionLike::append_block(&region, block);
        OperationBuilder::new("func.func", location)
            .add_attributes(&[
                (self.identifier("sym_name"), self.string(name)),
                (self.identifier("function_type"), self.type_attribute(self.function_type(inputs, results))),
            ])
            .add_regions([region])
            .build()
            .map_err(|_| BuildError { op: "func.func" })
    }

    /// `func.return operands`.
    ///
    /// # Errors
    /// When MLIR cannot create the op.
    pub fn func_return(&self, operands: &[Value<'c, '_>], location: Location<'c>) -> Result<Operation<'c>, BuildError> {
        OperationBuilder::new("func.return", location).add_operands(operands).build().map_err(|_| BuildError { op: "func.return" })
    }

    /// An attribute holding a JSON value (dictionaries, arrays, strings,
    /// integers, booleans; other numbers as `f64`), for strategy bindings.
    #[must_use]
    pub fn json(&self, value: &serde_json::Value) -> Attribute<'c> {
        use serde_json::Value as Json;
        match value {
            Json::Null => self.unit(),
            Json::Bool(b) => {
                // SAFETY: a live context.
                unsafe { Attribute::from_raw(mlir_sys::mlirBoolAttrGet(self.context, i32::from(*b))) }
            }
            Json::Number(n) => match n.as_i64() {
                Some(i) => self.i64(i),
                None => self.f64(n.as_f64().unwrap_or(0.0)),
            },
            Json::String(s) => self.string(s),
            Json::Array(items) => self.array(&items.iter().map(|v| self.json(v)).collect::<Vec<_>>()),
            Json::Object(map) => {
                let mut entries: Vec<(&str, Attribute<'c>)> =
                    map.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.as_str(), self.json(v))).collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                self.dictionary(&entries)
            }
        }
    }
}

/// The first result of a freshly appended op.
#[must_use]
pub fn result<'c, 'a>(op: OperationRef<'c, 'a>, index: usize) -> Value<'c, 'a> {
    match op.result(index) {
        Ok(result) => result.into(),
        Err(_) => unreachable!("the typed builder gave '{}' this result", crate::ir::read::name_of(op)),
    }
}

#[cfg(test)]
mod tests {
    use melior::ir::{AttributeLike, TypeLike};

    use super::Builder;
    use crate::ir::{
        context::create_context,
        intern::{open_context, Scope},
    };

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
            // One op's names at once, each MLIR's own identifier.
            static NAMES: [&str; 2] = ["id", "ops"];
            for _ in 0..2 {
                let (names, seven) = builder_a.with_attributes(&NAMES, |names, a| (names.map(|n| n.ptr), a.count(7).to_raw().ptr));
                assert_eq!(names, [builder_a.identifier("id").to_raw().ptr, builder_a.identifier("ops").to_raw().ptr]);
                assert_eq!(seven, outside.1);
            }
            // The last string is served again only for the same text.
            let text = |a: melior::ir::Attribute| melior::ir::attribute::StringAttribute::try_from(a).map(|s| s.value().to_string());
            let made = builder_a.string("s0.fwd@mb0");
            builder_a.reuse_string(made);
            assert_eq!(builder_a.string("s0.fwd@mb0"), made);
            let other = builder_a.string("s0.fwd@mb1");
            assert_eq!(text(other).as_deref(), Ok("s0.fwd@mb1"));
            assert_eq!(text(builder_a.string("s0.fwd@mb0")).as_deref(), Ok("s0.fwd@mb0"));
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
