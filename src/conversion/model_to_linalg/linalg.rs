//! Building the upstream ops the ModelIR lowering emits: `linalg`
//! (generic, matmul, batch_matmul), `tensor` (empty, reshapes, slices),
//! `arith`, `math`, `scf.for` and `func`, on static f32 tensors. One typed
//! function per op, each returning its results, so the rules read like the
//! math they write out; nothing is printed and parsed back but affine maps
//! and iterator kinds, which are attributes.

use melior::{
    ir::{
        attribute::FloatAttribute,
        block::BlockLike,
        operation::{OperationBuilder, OperationLike},
        Attribute, Block, BlockRef, Identifier, Location, Operation, Region, RegionLike, Type, TypeLike, Value, ValueLike,
    },
    Context,
};

use crate::dialect::builder::{BuildError, Builder};

pub(super) type R<T> = Result<T, BuildError>;

/// `ShapedType::kDynamic`: a dynamic offset in a slice's static list.
const DYNAMIC: i64 = i64::MIN;

/// Parallel or reduction loop of a `linalg.generic`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Iter {
    P,
    R,
}

/// An affine map `(d0, ..., d{rank-1}) -> (results)`; `results` name dims
/// by index (`"d0"`, ...) or are expressions over them.
pub(super) fn map(rank: usize, results: &[String]) -> String {
    let dims: Vec<String> = (0..rank).map(|d| format!("d{d}")).collect();
    format!("affine_map<({}) -> ({})>", dims.join(", "), results.join(", "))
}

/// The identity map of `rank` dims.
pub(super) fn identity(rank: usize) -> String {
    map(rank, &(0..rank).map(|d| format!("d{d}")).collect::<Vec<_>>())
}

/// The map reading dims `dims` of the iteration space, in that order.
pub(super) fn dims(rank: usize, dims: &[usize]) -> String {
    map(rank, &dims.iter().map(|d| format!("d{d}")).collect::<Vec<_>>())
}

/// Appends upstream ops to a block.
#[derive(Clone, Copy)]
pub(super) struct Lin<'c> {
    pub ctx: &'c Context,
    pub b: Builder<'c>,
    pub f32: Type<'c>,
    pub index: Type<'c>,
    pub loc: Location<'c>,
}

impl<'c> Lin<'c> {
    pub fn new(ctx: &'c Context, loc: Location<'c>) -> R<Self> {
        let b = Builder::new(ctx);
        let f32 = b.parse_type("f32").ok_or(BuildError { op: "f32" })?;
        Ok(Self { ctx, b, f32, index: b.index_type(), loc })
    }

    /// The same builder, locating ops at `loc`.
    pub fn at(&self, loc: Location<'c>) -> Self {
        Self { loc, ..*self }
    }

    pub fn tensor(&self, shape: &[i64]) -> Type<'c> {
        self.b.tensor(shape, self.f32)
    }

    fn id(&self, name: &str) -> Identifier<'c> {
        Identifier::new(self.ctx, name)
    }

    fn parse(&self, text: &str) -> R<Attribute<'c>> {
        Attribute::parse(self.ctx, text).ok_or(BuildError { op: "attribute" })
    }

    fn i64_array(&self, values: &[i64]) -> Attribute<'c> {
        self.b.i64_array(values)
    }

    fn segments(&self, sizes: &[i32]) -> (Identifier<'c>, Attribute<'c>) {
        (self.id("operandSegmentSizes"), self.b.i32_array(sizes))
    }

    /// Appends a built op and returns its results.
    pub fn push<'a>(
        &self,
        block: &BlockRef<'c, 'a>,
        op: Result<Operation<'c>, melior::Error>,
        name: &'static str,
    ) -> R<Vec<Value<'c, 'a>>> {
        let op = block.append_operation(op.map_err(|_| BuildError { op: name })?);
        Ok(op.results().map(Into::into).collect())
    }

    fn one<'a>(&self, block: &BlockRef<'c, 'a>, op: Result<Operation<'c>, melior::Error>, name: &'static str) -> R<Value<'c, 'a>> {
        self.push(block, op, name)?.into_iter().next().ok_or(BuildError { op: name })
    }

    /// `func.func private @name(inputs) -> outputs` around `region` (its
    /// body, written), marked `noinline` when asked.
    pub fn private_function(
        &self,
        name: &str,
        inputs: &[Type<'c>],
        outputs: &[Type<'c>],
        region: Region<'c>,
        noinline: bool,
    ) -> R<Operation<'c>> {
        let b = &self.b;
        let mut attributes = vec![
            (self.id("sym_name"), b.string(name)),
            (self.id("function_type"), b.type_attribute(b.function_type(inputs, outputs))),
            (self.id("sym_visibility"), b.string("private")),
        ];
        if noinline {
            attributes.push((self.id("passthrough"), b.array(&[b.string("noinline")])));
        }
        OperationBuilder::new("func.func", self.loc)
            .add_attributes(&attributes)
            .add_regions([region])
            .build()
            .map_err(|_| BuildError { op: "func.func" })
    }

    /// `tensor.empty() : tensor<shape x f32>`.
    pub fn empty<'a>(&self, block: &BlockRef<'c, 'a>, shape: &[i64]) -> R<Value<'c, 'a>> {
        self.one(block, OperationBuilder::new("tensor.empty", self.loc).add_results(&[self.tensor(shape)]).build(), "tensor.empty")
    }

    /// `arith.constant v : f32`.
    pub fn constant<'a>(&self, block: &BlockRef<'c, 'a>, v: f64) -> R<Value<'c, 'a>> {
        let value = FloatAttribute::new(self.ctx, self.f32, v).into();
        self.one(
            block,
            OperationBuilder::new("arith.constant", self.loc).add_attributes(&[(self.id("value"), value)]).add_results(&[self.f32]).build(),
            "arith.constant",
        )
    }

    /// `arith.constant i : index`.
    pub fn index_constant<'a>(&self, block: &BlockRef<'c, 'a>, i: i64) -> R<Value<'c, 'a>> {
        let value = melior::ir::attribute::IntegerAttribute::new(self.index, i).into();
        self.one(
            block,
            OperationBuilder::new("arith.constant", self.loc)
                .add_attributes(&[(self.id("value"), value)])
                .add_results(&[self.index])
                .build(),
            "arith.constant",
        )
    }

    /// A constant f32 tensor holding `data` (row-major).
    pub fn dense<'a>(&self, block: &BlockRef<'c, 'a>, shape: &[i64], data: &[f32]) -> R<Value<'c, 'a>> {
        let ty = self.tensor(shape);
        // SAFETY: a live shaped type; MLIR copies `data`.
        let value =
            unsafe { Attribute::from_raw(mlir_sys::mlirDenseElementsAttrFloatGet(ty.to_raw(), data.len() as isize, data.as_ptr())) };
        self.one(
            block,
            OperationBuilder::new("arith.constant", self.loc).add_attributes(&[(self.id("value"), value)]).add_results(&[ty]).build(),
            "arith.constant",
        )
    }

    /// A tensor of `shape` filled with `v`.
    pub fn full<'a>(&self, block: &BlockRef<'c, 'a>, shape: &[i64], v: f64) -> R<Value<'c, 'a>> {
        let init = self.empty(block, shape)?;
        let rank = shape.len();
        let out = self.generic(block, &[], &[init], &[identity(rank)], &vec![Iter::P; rank], |s, _| Ok(vec![s.constant(v)?]))?;
        Ok(out[0])
    }

    /// `linalg.generic`: `ins`, `outs` (their element types are the body's
    /// arguments, then `outs` in order), one map per operand, the
    /// iterators; `body` returns the yielded values.
    pub fn generic<'a, F>(
        &self,
        block: &BlockRef<'c, 'a>,
        ins: &[Value<'c, 'a>],
        outs: &[Value<'c, 'a>],
        maps: &[String],
        iters: &[Iter],
        body: F,
    ) -> R<Vec<Value<'c, 'a>>>
    where
        F: for<'b> FnOnce(&Scalar<'c, 'b>, &[Value<'c, 'b>]) -> R<Vec<Value<'c, 'b>>>,
    {
        let element = |v: &Value<'c, 'a>| crate::ir::read::tensor_element(v.r#type()).unwrap_or(self.f32);
        let args: Vec<(Type<'c>, Location<'c>)> = ins.iter().chain(outs).map(|v| (element(v), self.loc)).collect();
        let region = Region::new();
        {
            let body_block = Block::new(&args);
            let inner = region.append_block(body_block);
            let scalar = Scalar { lin: *self, block: inner };
            let arguments: Vec<Value<'c, '_>> = (0..args.len()).filter_map(|i| inner.argument(i).ok().map(Into::into)).collect();
            let yielded = body(&scalar, &arguments)?;
            inner.append_operation(
                OperationBuilder::new("linalg.yield", self.loc)
                    .add_operands(&yielded)
                    .build()
                    .map_err(|_| BuildError { op: "linalg.yield" })?,
            );
        }
        let mut map_attrs = Vec::new();
        for m in maps {
            map_attrs.push(self.parse(m)?);
        }
        let mut iter_attrs = Vec::new();
        for i in iters {
            iter_attrs.push(self.parse(if *i == Iter::P {
                "#linalg.iterator_type<parallel>"
            } else {
                "#linalg.iterator_type<reduction>"
            })?);
        }
        let operands: Vec<Value<'c, 'a>> = ins.iter().chain(outs).copied().collect();
        let results: Vec<Type<'c>> = outs.iter().map(|v| v.r#type()).collect();
        let op = OperationBuilder::new("linalg.generic", self.loc)
            .add_operands(&operands)
            .add_results(&results)
            .add_attributes(&[
                (self.id("indexing_maps"), self.b.array(&map_attrs)),
                (self.id("iterator_types"), self.b.array(&iter_attrs)),
                self.segments(&[ins.len() as i32, outs.len() as i32]),
            ])
            .add_regions([region])
            .build();
        self.push(block, op, "linalg.generic")
    }

    /// Element-wise over tensors of one shape (`shape`): `f` of each
    /// element of `ins`, into a fresh tensor.
    pub fn map_n<'a, F>(&self, block: &BlockRef<'c, 'a>, ins: &[(Value<'c, 'a>, String)], shape: &[i64], f: F) -> R<Value<'c, 'a>>
    where
        F: for<'b> FnOnce(&Scalar<'c, 'b>, &[Value<'c, 'b>]) -> R<Value<'c, 'b>>,
    {
        let rank = shape.len();
        let init = self.empty(block, shape)?;
        let values: Vec<Value<'c, 'a>> = ins.iter().map(|(v, _)| *v).collect();
        let mut maps: Vec<String> = ins.iter().map(|(_, m)| m.clone()).collect();
        maps.push(identity(rank));
        let n = ins.len();
        let out = self.generic(block, &values, &[init], &maps, &vec![Iter::P; rank], move |s, a| Ok(vec![f(s, &a[..n])?]))?;
        Ok(out[0])
    }

    /// Sums over the last dimension: `[rows.., n] -> [rows..]`, of `f` of
    /// each element of `ins` (read through their maps over the rank of
    /// `shape`, the iteration space).
    pub fn reduce_last<'a, F>(
        &self,
        block: &BlockRef<'c, 'a>,
        ins: &[(Value<'c, 'a>, String)],
        shape: &[i64],
        init: f64,
        combine: Combine,
        f: F,
    ) -> R<Value<'c, 'a>>
    where
        F: for<'b> FnOnce(&Scalar<'c, 'b>, &[Value<'c, 'b>]) -> R<Value<'c, 'b>>,
    {
        let rank = shape.len();
        let rows = &shape[..rank - 1];
        let acc = self.full(block, rows, init)?;
        let values: Vec<Value<'c, 'a>> = ins.iter().map(|(v, _)| *v).collect();
        let mut maps: Vec<String> = ins.iter().map(|(_, m)| m.clone()).collect();
        maps.push(dims(rank, &(0..rank - 1).collect::<Vec<_>>()));
        let mut iters = vec![Iter::P; rank - 1];
        iters.push(Iter::R);
        let n = ins.len();
        let out = self.generic(block, &values, &[acc], &maps, &iters, move |s, a| {
            let x = f(s, &a[..n])?;
            Ok(vec![combine.apply(s, a[n], x)?])
        })?;
        Ok(out[0])
    }

    /// Sums over every dimension but the last: `[rows.., n] -> [n]` (a
    /// norm's parameter gradients over the flattened rows).
    pub fn reduce_rows<'a, F>(&self, block: &BlockRef<'c, 'a>, ins: &[(Value<'c, 'a>, String)], shape: &[i64], f: F) -> R<Value<'c, 'a>>
    where
        F: for<'b> FnOnce(&Scalar<'c, 'b>, &[Value<'c, 'b>]) -> R<Value<'c, 'b>>,
    {
        let rank = shape.len();
        let acc = self.full(block, &shape[rank - 1..], 0.0)?;
        let values: Vec<Value<'c, 'a>> = ins.iter().map(|(v, _)| *v).collect();
        let mut maps: Vec<String> = ins.iter().map(|(_, m)| m.clone()).collect();
        maps.push(dims(rank, &[rank - 1]));
        let mut iters = vec![Iter::R; rank - 1];
        iters.push(Iter::P);
        let n = ins.len();
        let out = self.generic(block, &values, &[acc], &maps, &iters, move |s, a| {
            let x = f(s, &a[..n])?;
            Ok(vec![s.add(a[n], x)?])
        })?;
        Ok(out[0])
    }

    /// `linalg.matmul`: `[m, k] x [k, n] -> [m, n]` (into zeros).
    pub fn matmul<'a>(&self, block: &BlockRef<'c, 'a>, a: Value<'c, 'a>, b: Value<'c, 'a>, out: [i64; 2]) -> R<Value<'c, 'a>> {
        self.named("linalg.matmul", block, a, b, &out)
    }

    /// `linalg.batch_matmul`: `[g, m, k] x [g, k, n] -> [g, m, n]`.
    pub fn batch_matmul<'a>(&self, block: &BlockRef<'c, 'a>, a: Value<'c, 'a>, b: Value<'c, 'a>, out: [i64; 3]) -> R<Value<'c, 'a>> {
        self.named("linalg.batch_matmul", block, a, b, &out)
    }

    fn named<'a>(&self, name: &'static str, block: &BlockRef<'c, 'a>, a: Value<'c, 'a>, b: Value<'c, 'a>, out: &[i64]) -> R<Value<'c, 'a>> {
        let init = self.full(block, out, 0.0)?;
        let op = OperationBuilder::new(name, self.loc)
            .add_operands(&[a, b, init])
            .add_results(&[self.tensor(out)])
            .add_attributes(&[self.segments(&[2, 1])])
            .add_regions([Region::new()])
            .build()
            .map_err(|_| BuildError { op: name })?;
        // SAFETY: a linalg named op with an empty region, as the C API's
        // region builder expects.
        unsafe { mlir_sys::mlirLinalgFillBuiltinNamedOpRegion(op.to_raw()) };
        self.one(block, Ok(op), name)
    }

    fn reassociation(&self, groups: &[&[usize]]) -> Attribute<'c> {
        let groups: Vec<Attribute<'c>> =
            groups.iter().map(|g| self.b.array(&g.iter().map(|d| self.b.i64(*d as i64)).collect::<Vec<_>>())).collect();
        self.b.array(&groups)
    }

    /// `tensor.collapse_shape` merging each group of dims.
    pub fn collapse<'a>(&self, block: &BlockRef<'c, 'a>, x: Value<'c, 'a>, groups: &[&[usize]], out: &[i64]) -> R<Value<'c, 'a>> {
        let op = OperationBuilder::new("tensor.collapse_shape", self.loc)
            .add_operands(&[x])
            .add_results(&[self.tensor(out)])
            .add_attributes(&[(self.id("reassociation"), self.reassociation(groups))])
            .build();
        self.one(block, op, "tensor.collapse_shape")
    }

    /// `tensor.expand_shape` splitting each dim into its group.
    pub fn expand<'a>(&self, block: &BlockRef<'c, 'a>, x: Value<'c, 'a>, groups: &[&[usize]], out: &[i64]) -> R<Value<'c, 'a>> {
        let op = OperationBuilder::new("tensor.expand_shape", self.loc)
            .add_operands(&[x])
            .add_results(&[self.tensor(out)])
            .add_attributes(&[
                (self.id("reassociation"), self.reassociation(groups)),
                (self.id("static_output_shape"), self.i64_array(out)),
            ])
            .build();
        self.one(block, op, "tensor.expand_shape")
    }

    /// `tensor.extract_slice` of `sizes` at `offsets` (unit strides);
    /// `dynamic0` replaces the first offset (a loop's row offset).
    pub fn extract<'a>(
        &self,
        block: &BlockRef<'c, 'a>,
        x: Value<'c, 'a>,
        offsets: &[i64],
        sizes: &[i64],
        dynamic0: Option<Value<'c, 'a>>,
    ) -> R<Value<'c, 'a>> {
        self.extract_at(block, x, offsets, sizes, dynamic0.map(|v| (0, v)))
    }

    /// [`Self::extract`] with the offset of dimension `dim` dynamic.
    pub fn extract_at<'a>(
        &self,
        block: &BlockRef<'c, 'a>,
        x: Value<'c, 'a>,
        offsets: &[i64],
        sizes: &[i64],
        dynamic_at: Option<(usize, Value<'c, 'a>)>,
    ) -> R<Value<'c, 'a>> {
        let (static_offsets, dynamic) = Self::offsets(offsets, dynamic_at);
        let mut operands = vec![x];
        operands.extend(dynamic.iter().copied());
        let op = OperationBuilder::new("tensor.extract_slice", self.loc)
            .add_operands(&operands)
            .add_results(&[self.tensor(sizes)])
            .add_attributes(&[
                (self.id("static_offsets"), self.i64_array(&static_offsets)),
                (self.id("static_sizes"), self.i64_array(sizes)),
                (self.id("static_strides"), self.i64_array(&vec![1; sizes.len()])),
                self.segments(&[1, dynamic.len() as i32, 0, 0]),
            ])
            .build();
        self.one(block, op, "tensor.extract_slice")
    }

    /// `tensor.insert_slice` of `src` into `dest` at `offsets`.
    pub fn insert<'a>(
        &self,
        block: &BlockRef<'c, 'a>,
        src: Value<'c, 'a>,
        dest: Value<'c, 'a>,
        offsets: &[i64],
        sizes: &[i64],
        dynamic0: Option<Value<'c, 'a>>,
    ) -> R<Value<'c, 'a>> {
        let (static_offsets, dynamic) = Self::offsets(offsets, dynamic0.map(|v| (0, v)));
        let mut operands = vec![src, dest];
        operands.extend(dynamic.iter().copied());
        let op = OperationBuilder::new("tensor.insert_slice", self.loc)
            .add_operands(&operands)
            .add_results(&[dest.r#type()])
            .add_attributes(&[
                (self.id("static_offsets"), self.i64_array(&static_offsets)),
                (self.id("static_sizes"), self.i64_array(sizes)),
                (self.id("static_strides"), self.i64_array(&vec![1; sizes.len()])),
                self.segments(&[1, 1, dynamic.len() as i32, 0, 0]),
            ])
            .build();
        self.one(block, op, "tensor.insert_slice")
    }

    fn offsets<'a>(offsets: &[i64], dynamic: Option<(usize, Value<'c, 'a>)>) -> (Vec<i64>, Vec<Value<'c, 'a>>) {
        let mut static_offsets = offsets.to_vec();
        match dynamic {
            Some((dim, v)) if dim < static_offsets.len() => {
                static_offsets[dim] = DYNAMIC;
                (static_offsets, vec![v])
            }
            _ => (static_offsets, Vec::new()),
        }
    }

    /// `arith.muli` of two indices.
    pub fn index_mul<'a>(&self, block: &BlockRef<'c, 'a>, a: Value<'c, 'a>, b: Value<'c, 'a>) -> R<Value<'c, 'a>> {
        self.one(
            block,
            OperationBuilder::new("arith.muli", self.loc).add_operands(&[a, b]).add_results(&[self.index]).build(),
            "arith.muli",
        )
    }
}

/// How a reduction combines its accumulator with an element.
#[derive(Clone, Copy)]
pub(super) enum Combine {
    Sum,
    Max,
}

impl Combine {
    fn apply<'c, 'b>(self, s: &Scalar<'c, 'b>, acc: Value<'c, 'b>, x: Value<'c, 'b>) -> R<Value<'c, 'b>> {
        match self {
            Self::Sum => s.add(acc, x),
            Self::Max => s.max(acc, x),
        }
    }
}

/// Scalar ops inside a `linalg.generic` body.
pub(super) struct Scalar<'c, 'b> {
    lin: Lin<'c>,
    block: BlockRef<'c, 'b>,
}

impl<'c, 'b> Scalar<'c, 'b> {
    fn op(&self, name: &'static str, operands: &[Value<'c, 'b>], result: Type<'c>) -> R<Value<'c, 'b>> {
        let op = OperationBuilder::new(name, self.lin.loc).add_operands(operands).add_results(&[result]).build();
        self.lin.one(&self.block, op, name)
    }

    fn f(&self, name: &'static str, operands: &[Value<'c, 'b>]) -> R<Value<'c, 'b>> {
        self.op(name, operands, self.lin.f32)
    }

    pub fn add(&self, a: Value<'c, 'b>, b: Value<'c, 'b>) -> R<Value<'c, 'b>> {
        self.f("arith.addf", &[a, b])
    }
    pub fn sub(&self, a: Value<'c, 'b>, b: Value<'c, 'b>) -> R<Value<'c, 'b>> {
        self.f("arith.subf", &[a, b])
    }
    pub fn mul(&self, a: Value<'c, 'b>, b: Value<'c, 'b>) -> R<Value<'c, 'b>> {
        self.f("arith.mulf", &[a, b])
    }
    pub fn div(&self, a: Value<'c, 'b>, b: Value<'c, 'b>) -> R<Value<'c, 'b>> {
        self.f("arith.divf", &[a, b])
    }
    pub fn max(&self, a: Value<'c, 'b>, b: Value<'c, 'b>) -> R<Value<'c, 'b>> {
        self.f("arith.maximumf", &[a, b])
    }
    pub fn neg(&self, a: Value<'c, 'b>) -> R<Value<'c, 'b>> {
        self.f("arith.negf", &[a])
    }
    pub fn exp(&self, a: Value<'c, 'b>) -> R<Value<'c, 'b>> {
        self.f("math.exp", &[a])
    }
    pub fn tanh(&self, a: Value<'c, 'b>) -> R<Value<'c, 'b>> {
        self.f("math.tanh", &[a])
    }
    pub fn rsqrt(&self, a: Value<'c, 'b>) -> R<Value<'c, 'b>> {
        self.f("math.rsqrt", &[a])
    }
    pub fn sqrt(&self, a: Value<'c, 'b>) -> R<Value<'c, 'b>> {
        self.f("math.sqrt", &[a])
    }
    pub fn constant(&self, v: f64) -> R<Value<'c, 'b>> {
        self.lin.constant(&self.block, v)
    }
    /// `a * c` for a constant `c`.
    pub fn scale(&self, a: Value<'c, 'b>, c: f64) -> R<Value<'c, 'b>> {
        let c = self.constant(c)?;
        self.mul(a, c)
    }
    /// The logistic function `1 / (1 + e^-x)`.
    pub fn sigmoid(&self, x: Value<'c, 'b>) -> R<Value<'c, 'b>> {
        let e = self.exp(self.neg(x)?)?;
        let one = self.constant(1.0)?;
        self.div(one, self.add(one, e)?)
    }
    /// `linalg.index dim`.
    pub fn index(&self, dim: i64) -> R<Value<'c, 'b>> {
        let op = OperationBuilder::new("linalg.index", self.lin.loc)
            .add_attributes(&[(Identifier::new(self.lin.ctx, "dim"), self.lin.b.i64(dim))])
            .add_results(&[self.lin.index])
            .build();
        self.lin.one(&self.block, op, "linalg.index")
    }

    /// `a > b ? then : otherwise` on floats (ordered: NaN compares false).
    pub fn select_if_above(&self, a: Value<'c, 'b>, b: Value<'c, 'b>, then: Value<'c, 'b>, otherwise: Value<'c, 'b>) -> R<Value<'c, 'b>> {
        // arith.cmpf predicate 2 = ogt.
        self.select_if("arith.cmpf", 2, a, b, then, otherwise)
    }

    /// `a > b ? then : otherwise` on indices (unsigned).
    pub fn select_if_greater(&self, a: Value<'c, 'b>, b: Value<'c, 'b>, then: Value<'c, 'b>, otherwise: Value<'c, 'b>) -> R<Value<'c, 'b>> {
        // arith.cmpi predicate 8 = ugt.
        self.select_if("arith.cmpi", 8, a, b, then, otherwise)
    }

    /// `compare(a, b) ? then : otherwise` with `compare` the `arith` comparison
    /// `op` and its `predicate` case.
    fn select_if(
        &self,
        op: &str,
        predicate: i64,
        a: Value<'c, 'b>,
        b: Value<'c, 'b>,
        then: Value<'c, 'b>,
        otherwise: Value<'c, 'b>,
    ) -> R<Value<'c, 'b>> {
        let i1 = self.lin.b.parse_type("i1").ok_or(BuildError { op: "i1" })?;
        let cmp = OperationBuilder::new(op, self.lin.loc)
            .add_operands(&[a, b])
            .add_attributes(&[(Identifier::new(self.lin.ctx, "predicate"), self.lin.b.i64(predicate))])
            .add_results(&[i1])
            .build();
        let cmp = self.lin.one(&self.block, cmp, "arith.cmp")?;
        self.op("arith.select", &[cmp, then, otherwise], self.lin.f32)
    }
}

/// `value.r#type()`'s static shape.
pub(super) fn shape_of(value: Value) -> Vec<i64> {
    crate::ir::read::tensor_shape(value.r#type()).unwrap_or_default().into_iter().map(|d| d.unwrap_or(-1)).collect()
}

/// A static tensor type's dimensions (a dynamic one as 0: the lowerings
/// build static shapes only, and the validation refused the others).
pub(super) fn type_dims(ty: Type) -> Vec<i64> {
    crate::ir::read::tensor_shape(ty).unwrap_or_default().into_iter().map(|d| d.unwrap_or(0)).collect()
}

/// `attribute` as an `f64`.
pub(super) fn real(attribute: Attribute) -> Option<f64> {
    FloatAttribute::try_from(attribute).ok().map(|f| f.value())
}
