//! `lower-dist-to-runtime`: rewrites async collectives, point-to-point
//! transfers, the two redistribution copies and `dist.wait` into `func.call`s
//! of Blueprint's C ABI runtime (see [`crate::runtime::interface`]), in the manner of
//! IMEX's `lower-distruntime-to-idtr`, and declares the functions it calls.
//!
//! Per async op: the input tensor becomes an unranked memref
//! (`bufferization.to_buffer` + `memref.cast`), read again (a `read_only`
//! `to_buffer`) after the wait, because the runtime may read the buffer
//! until the wait returns, so bufferization must not reuse it in between;
//! the output is a `tensor.empty`
//! whose buffer the runtime fills; rank, shape and offset lists are stack
//! buffers in a `memref.alloca_scope` around the call (released when it
//! ends, also inside loops; the runtime copies what it needs at the start);
//! the handle becomes the call's `i64`. The wait becomes `_bprt_wait`, after which the output buffer is
//! read back as a tensor (`bufferization.to_tensor`).
//!
//! `cf.assert` becomes `_bprt_assert(cond, "message at location")`, so a
//! failed assert stops its rank by name with its message (upstream's
//! lowering prints it into a stdout buffer and aborts the whole process).
//!
//! Where it does better than the reference: every declaration is inserted
//! once (also when the pass runs twice) and only for functions used; static
//! result shapes give a `tensor.empty` without operands; nothing allocated
//! for a call outlives it; an op it cannot lower is a diagnostic and the
//! module is left untouched. When nothing of a `dist` program is left but its
//! header and meshes, those go too.

use std::collections::{BTreeMap, HashMap};

use melior::{
    dialect::DialectHandle,
    ir::{
        block::BlockLike,
        operation::{OperationBuilder, OperationLike},
        BlockRef, Location, OperationRef, Region, RegionLike, Value, ValueLike,
    },
    pass::ExternalPass,
};

use crate::ir::{
    diagnostics::emit_error,
    ods::{OpKind, Reduction},
    read::{
        collect_ops, dialect_of, enum_attr, i32_array_attr, i64_array_attr, int_attr, name_of, str_attr, symbol_attr, tensor_element,
        tensor_shape, type_string, users,
    },
    rewrite::{erase, identifier, known_attribute, known_type, replace_all_uses},
};
use crate::runtime::interface::{ElementType, ReduceOp, RuntimeFunction};

crate::ir::pass_macro::external_pass!(
    "LowerDistToRuntime",
    "lower-dist-to-runtime",
    "Lower async dist communication, redistribution copies, waits and cf.assert to runtime calls",
    run,
    &[
        DialectHandle::arith(),
        DialectHandle::func(),
        DialectHandle::memref(),
        DialectHandle::tensor(),
        // SAFETY: the handle getter has no preconditions.
        unsafe { DialectHandle::from_raw(mlir_sys::mlirGetDialectHandle__bufferization__()) },
    ]
);

/// A rank query (`dist.rank` / `dist.num_ranks`) and its runtime call.
struct RankQuery<'c, 'a> {
    op: OperationRef<'c, 'a>,
    function: RuntimeFunction,
    team: i64,
}

/// Everything the pass rewrites.
struct Plan<'c, 'a> {
    lowerings: Vec<Lowering<'c, 'a>>,
    queries: Vec<RankQuery<'c, 'a>>,
    /// `cf.assert`s, which become `_bprt_assert` calls.
    asserts: Vec<OperationRef<'c, 'a>>,
}

/// What one async op lowers to, decided before anything changes.
struct Lowering<'c, 'a> {
    start: OperationRef<'c, 'a>,
    wait: OperationRef<'c, 'a>,
    function: RuntimeFunction,
    team: i64,
    /// Trailing scalar arguments after the data operands, as (value, type).
    scalars: Vec<(i64, &'static str)>,
    group: Group,
    /// A transfer along a mesh axis (`along`): the mesh's shape and the
    /// axis; its `source` and `dest` scalars are coordinates on that axis.
    along: Option<(Vec<i64>, i64)>,
}

/// Whom a collective spans.
enum Group {
    /// Not a collective (a transfer or a copy).
    None,
    /// Explicit participants (`over [...]`), in call order.
    Ranks(Vec<i64>),
    /// The calling rank's group along mesh axes (`axes [...]`): built at
    /// run time from its coordinates on the mesh (`_bprt_mesh_group`).
    Axes { shape: Vec<i64>, axes: Vec<i64> },
}

impl Group {
    /// How many ranks it holds (1 for none).
    fn size(&self) -> i64 {
        match self {
            Group::None => 1,
            Group::Ranks(ranks) => ranks.len() as i64,
            Group::Axes { shape, axes } => axes.iter().map(|&a| shape[a as usize]).product(),
        }
    }
}

/// A mesh's axis names and shape, by symbol.
type Meshes = HashMap<String, (Vec<String>, Vec<i64>)>;

fn run(module: OperationRef, pass: ExternalPass) {
    match plan(module) {
        Ok(plan) => apply(module, plan),
        Err(failures) => {
            for (op, message) in failures {
                emit_error(op.location(), &format!("'{}' op {message}", name_of(op)));
            }
            pass.signal_failure();
        }
    }
}

type Failures<'c, 'a> = Vec<(OperationRef<'c, 'a>, String)>;

fn plan<'c, 'a>(module: OperationRef<'c, 'a>) -> Result<Plan<'c, 'a>, Failures<'c, 'a>> {
    let ops = collect_ops(module);
    let teams: HashMap<String, i64> = ops
        .iter()
        .filter(|op| OpKind::of(**op) == Some(OpKind::DistMesh))
        .filter_map(|op| str_attr(*op, "sym_name"))
        .enumerate()
        .map(|(i, name)| (name.to_string(), i as i64))
        .collect();
    let meshes: Meshes = ops
        .iter()
        .filter(|op| OpKind::of(**op) == Some(OpKind::DistMesh))
        .filter_map(|op| {
            let names = op.attribute("axes").ok().and_then(crate::ir::read::string_list)?;
            Some((str_attr(*op, "sym_name")?.to_string(), (names, i64_array_attr(*op, "shape")?)))
        })
        .collect();
    let mut lowerings = Vec::new();
    let mut queries = Vec::new();
    let mut failures = Vec::new();
    for &op in &ops {
        let Some(kind) = OpKind::of(op).filter(|k| k.dialect() == "dist") else { continue };
        match kind {
            OpKind::DistHeader | OpKind::DistMesh | OpKind::DistWait => {}
            OpKind::DistRank | OpKind::DistNumRanks => {
                let function = if kind == OpKind::DistRank { RuntimeFunction::PRank } else { RuntimeFunction::NProcs };
                match symbol_attr(op, "mesh").and_then(|mesh| teams.get(mesh)) {
                    Some(&team) => queries.push(RankQuery { op, function, team }),
                    None => failures.push((op, "names no mesh of this module".to_string())),
                }
            }
            k if k.async_form().is_some() => {
                failures.push((op, "is synchronous; run 'dist-async' first so it has a start and a wait".to_string()))
            }
            k if k.is_async() => match plan_one(op, k, &teams, &meshes) {
                Ok(lowering) => lowerings.push(lowering),
                Err(message) => failures.push((op, message)),
            },
            _ => failures.push((
                op,
                "cannot be lowered to runtime calls (only async communication, redistribution copies and waits are)".to_string(),
            )),
        }
    }
    let mut declared: BTreeMap<String, RuntimeFunction> = BTreeMap::new();
    for lowering in &lowerings {
        declared.insert(lowering.function.symbol(), lowering.function);
        if matches!(lowering.group, Group::Axes { .. }) {
            declared.insert(RuntimeFunction::MeshGroup.symbol(), RuntimeFunction::MeshGroup);
        }
        if lowering.along.is_some() {
            declared.insert(RuntimeFunction::MeshPeer.symbol(), RuntimeFunction::MeshPeer);
        }
    }
    for query in &queries {
        declared.insert(query.function.symbol(), query.function);
    }
    declared.insert(RuntimeFunction::Wait.symbol(), RuntimeFunction::Wait);
    declared.insert(RuntimeFunction::Op.symbol(), RuntimeFunction::Op);
    for op in &ops {
        if name_of(*op) != "func.func" {
            continue;
        }
        let Some(symbol) = str_attr(*op, "sym_name") else { continue };
        if let Some(function) = declared.get(symbol) {
            let existing = op.attribute("function_type").map(crate::ir::read::attribute_text).unwrap_or_default();
            if existing != function.function_type() {
                failures.push((
                    *op,
                    format!("'{symbol}' is a runtime entry point and must have type {}, but has {existing}", function.function_type()),
                ));
            }
        }
    }
    if failures.is_empty() {
        let asserts = ops.iter().copied().filter(|op| name_of(*op) == "cf.assert").collect();
        Ok(Plan { lowerings, queries, asserts })
    } else {
        Err(failures)
    }
}

/// The runtime's reduction for an ODS reduction (exhaustive).
const fn reduce_op(reduction: Reduction) -> ReduceOp {
    match reduction {
        Reduction::Sum => ReduceOp::Sum,
        Reduction::Max => ReduceOp::Max,
        Reduction::Min => ReduceOp::Min,
        Reduction::Prod => ReduceOp::Prod,
    }
}

fn plan_one<'c, 'a>(
    op: OperationRef<'c, 'a>,
    kind: OpKind,
    teams: &HashMap<String, i64>,
    meshes: &Meshes,
) -> Result<Lowering<'c, 'a>, String> {
    let handle = op.result(0).map_err(|e| e.to_string())?;
    let waits = users(handle);
    let wait = match waits.as_slice() {
        [wait] if OpKind::of(*wait) == Some(OpKind::DistWait) => *wait,
        _ => return Err("must have exactly one 'dist.wait' on its handle".into()),
    };
    let input = op.operand(0).map_err(|e| e.to_string())?;
    let element = tensor_element(input.r#type())
        .map(type_string)
        .ok_or_else(|| format!("communicates {}, not a ranked tensor", type_string(input.r#type())))?;
    let element =
        ElementType::from_mlir(&element).ok_or_else(|| format!("has element type {element}, which the runtime does not support"))?;
    // Tensors become plain (identity-layout) memrefs: an encoding has no
    // buffer form here.
    for ty in [Some(input.r#type()), op.result(1).ok().map(|r| r.r#type())].into_iter().flatten() {
        if crate::ir::read::tensor_has_encoding(ty) {
            return Err(format!("communicates {}, whose tensor encoding the runtime lowering does not support", type_string(ty)));
        }
    }
    let team = match (symbol_attr(op, "mesh").or_else(|| symbol_attr(op, "team")), int_attr(op, "team")) {
        (Some(mesh), _) => *teams.get(mesh).ok_or_else(|| format!("names mesh @{mesh}, which is not in this module"))?,
        (None, Some(team)) => team,
        (None, None) => return Err("has no mesh or team".into()),
    };
    let group = match (i64_array_attr(op, "participants"), kind.is_collective()) {
        (Some(ranks), _) => Group::Ranks(ranks),
        (None, false) => Group::None,
        // A group named by mesh axes: each rank builds its own at run time.
        (None, true) => {
            let mesh = symbol_attr(op, "mesh").ok_or("names its group by mesh axes but no mesh")?;
            let (names, shape) = meshes.get(mesh).ok_or_else(|| format!("names mesh @{mesh}, which is not in this module"))?;
            let wanted = op.attribute("mesh_axes").ok().and_then(crate::ir::read::string_list).unwrap_or_default();
            let mut axes = Vec::with_capacity(wanted.len());
            for name in &wanted {
                let index =
                    names.iter().position(|n| n == name).ok_or_else(|| format!("names axis '{name}', which mesh @{mesh} does not have"))?;
                axes.push(index as i64);
            }
            if axes.is_empty() {
                return Err("names no participants and no mesh axes".into());
            }
            Group::Axes { shape: shape.clone(), axes }
        }
    };
    if op.attribute("slice").is_ok() {
        return Err("is placed on a mesh slice; the runtime lowering needs explicit ranks".into());
    }
    // A transfer along a mesh axis: its coordinates become each rank's
    // source and destination ranks at run time.
    let along = match str_attr(op, "along") {
        None => None,
        Some(axis) => {
            let mesh = symbol_attr(op, "mesh").ok_or("is placed along an axis but on no mesh")?;
            let (names, shape) = meshes.get(mesh).ok_or_else(|| format!("names mesh @{mesh}, which is not in this module"))?;
            let index = names
                .iter()
                .position(|n| n == axis)
                .ok_or_else(|| format!("is placed along '{axis}', which mesh @{mesh} does not have"))?;
            Some((shape.clone(), index as i64))
        }
    };
    let axis = int_attr(op, "axis").unwrap_or(0);
    let reduction = || {
        enum_attr::<Reduction>(op, "reduction").map(|r| i64::from(reduce_op(r).code())).ok_or_else(|| "has no valid reduction".to_string())
    };
    let (function, scalars) = match kind.sync_form().unwrap_or(kind) {
        OpKind::DistAllReduce => (RuntimeFunction::AllReduce(element), vec![(reduction()?, "i32")]),
        OpKind::DistReduceScatter => (RuntimeFunction::ReduceScatter(element), vec![(reduction()?, "i32"), (axis, "i64")]),
        OpKind::DistAllGather => (RuntimeFunction::AllGather(element), vec![(axis, "i64")]),
        OpKind::DistAllToAll => (RuntimeFunction::AllToAll(element), vec![(axis, "i64")]),
        OpKind::DistBroadcast => (RuntimeFunction::Broadcast(element), vec![(int_attr(op, "root").ok_or("has no root")?, "i64")]),
        OpKind::DistP2P => (
            RuntimeFunction::SendRecv(element),
            vec![(int_attr(op, "source").ok_or("has no source")?, "i64"), (int_attr(op, "dest").ok_or("has no dest")?, "i64")],
        ),
        OpKind::DistCopyReshape => (RuntimeFunction::CopyReshape(element), vec![]),
        OpKind::DistCopyPermute => (RuntimeFunction::CopyPermute(element), vec![]),
        other => return Err(format!("'{}' has no runtime lowering", other.name())),
    };
    Ok(Lowering { start: op, wait, function, team, scalars, group, along })
}

/// Inserts ops before a fixed op (or at the end of a block), in the
/// context of an anchor op.
pub(crate) struct Emitter<'c, 'a> {
    block: BlockRef<'c, 'a>,
    before: Option<OperationRef<'c, 'a>>,
    anchor: OperationRef<'c, 'a>,
    location: Location<'c>,
}

impl<'c, 'a> Emitter<'c, 'a> {
    pub(crate) fn new(before: OperationRef<'c, 'a>) -> Option<Self> {
        Some(Self { block: before.block()?, before: Some(before), anchor: before, location: before.location() })
    }

    /// `memref.alloca_scope` before the anchor, returning one `i64`, and an
    /// emitter that appends to its body: stack lists made inside it are
    /// released when the scope ends, also inside loops.
    fn alloca_scope(&self) -> (OperationRef<'c, 'a>, Emitter<'c, 'a>) {
        let region = Region::new();
        region.append_block(melior::ir::Block::new(&[]));
        let operation = OperationBuilder::new("memref.alloca_scope", self.location)
            .add_results(&[known_type(self.anchor, "i64")])
            .add_regions([region])
            .build()
            .unwrap_or_else(|e| unreachable!("lowering built an invalid alloca_scope: {e}"));
        let scope = self.insert(operation);
        let body = scope.region(0).ok().and_then(|r| r.first_block()).unwrap_or_else(|| unreachable!("alloca_scope has a body"));
        (scope, Emitter { block: body, before: None, anchor: self.anchor, location: self.location })
    }

    /// `scf.if %condition` without results or else branch before the
    /// anchor, and an emitter for its then-block (before its `scf.yield`).
    pub(crate) fn if_then(&self, condition: Value<'c, 'a>) -> Emitter<'c, 'a> {
        let then = Region::new();
        then.append_block(melior::ir::Block::new(&[]));
        let operation = OperationBuilder::new("scf.if", self.location)
            .add_operands(&[condition])
            .add_regions([then, Region::new()])
            .build()
            .unwrap_or_else(|e| unreachable!("lowering built an invalid scf.if: {e}"));
        let op = self.insert(operation);
        let body = op.region(0).ok().and_then(|r| r.first_block()).unwrap_or_else(|| unreachable!("scf.if has a then-block"));
        let terminator = OperationBuilder::new("scf.yield", self.location)
            .build()
            .unwrap_or_else(|e| unreachable!("lowering built an invalid scf.yield: {e}"));
        let terminator = body.append_operation(terminator);
        Emitter { block: body, before: Some(terminator), anchor: self.anchor, location: self.location }
    }

    pub(crate) fn insert(&self, operation: melior::ir::Operation<'c>) -> OperationRef<'c, 'a> {
        match self.before {
            Some(before) => self.block.insert_operation_before(before, operation),
            None => self.block.append_operation(operation),
        }
    }

    /// Builds `name(operands) {attributes} : results` before the anchor.
    pub(crate) fn op(&self, name: &str, operands: &[Value<'c, '_>], results: &[&str], attributes: &[(&str, &str)]) -> OperationRef<'c, 'a> {
        let anchor = self.anchor;
        let results: Vec<_> = results.iter().map(|t| known_type(anchor, t)).collect();
        let attributes: Vec<_> = attributes.iter().map(|(n, v)| (identifier(anchor, n), known_attribute(anchor, v))).collect();
        let operation = OperationBuilder::new(name, self.location)
            .add_operands(operands)
            .add_results(&results)
            .add_attributes(&attributes)
            .build()
            .unwrap_or_else(|e| unreachable!("lowering built an invalid '{name}': {e}"));
        self.insert(operation)
    }

    pub(crate) fn value(op: OperationRef<'c, 'a>) -> Value<'c, 'a> {
        op.result(0).map(Into::into).unwrap_or_else(|_| unreachable!("op has a result"))
    }

    pub(crate) fn constant(&self, value: i64, ty: &str) -> Value<'c, 'a> {
        Self::value(self.op("arith.constant", &[], &[ty], &[("value", &format!("{value} : {ty}"))]))
    }

    /// [`Self::list`] of `i64` constants.
    fn i64_list(&self, values: &[i64]) -> Value<'c, 'a> {
        let constants: Vec<Value<'c, 'a>> = values.iter().map(|v| self.constant(*v, "i64")).collect();
        self.list(&constants, "i64")
    }

    /// A stack buffer `memref<Nx{ty}>` holding `values`, cast to unranked.
    fn list(&self, values: &[Value<'c, 'a>], ty: &str) -> Value<'c, 'a> {
        let ranked = format!("memref<{}x{ty}>", values.len());
        let buffer = Self::value(self.op("memref.alloca", &[], &[&ranked], &[("operandSegmentSizes", "array<i32: 0, 0>")]));
        for (i, value) in values.iter().enumerate() {
            let index = self.constant(i as i64, "index");
            self.op("memref.store", &[*value, buffer, index], &[], &[]);
        }
        Self::value(self.op("memref.cast", &[buffer], &[&format!("memref<*x{ty}>")], &[]))
    }
}

/// Every group named by mesh axes, built at the entry of every public
/// function, all in one order: on MPI building a group splits the world
/// (a call every rank must make), and ranks that reach their first
/// collective of those axes at different points — a pipeline's stages, the
/// later one waiting for the earlier one's activation — would otherwise
/// wait on each other. Linear in the lowered ops plus the functions.
fn prepare_groups(module: OperationRef, lowerings: &[Lowering], names: &mut OpNames) {
    let groups: std::collections::BTreeSet<(i64, Vec<i64>, Vec<i64>)> = lowerings
        .iter()
        .filter_map(|l| match &l.group {
            Group::Axes { shape, axes } => Some((l.team, shape.clone(), axes.clone())),
            _ => None,
        })
        .collect();
    if groups.is_empty() {
        return;
    }
    for function in crate::ir::read::region_ops(module, 0) {
        let public = name_of(function) == "func.func" && str_attr(function, "sym_visibility").is_none_or(|v| v == "public");
        let first = function.region(0).ok().and_then(|r| r.first_block()).and_then(|b| b.first_operation());
        let (true, Some(first)) = (public, first) else { continue };
        // SAFETY: the op stays in its block while the emitter inserts before it.
        let first = unsafe { OperationRef::from_raw(first.to_raw()) };
        let Some(at) = Emitter::new(first) else { continue };
        // Announced, so a failure (a world that is not the mesh) names it.
        let what = format!("'mesh groups of @{}'", str_attr(function, "sym_name").unwrap_or("?"));
        announce(&at, names, &at_location(&what, function.location()));
        for (team, shape, axes) in &groups {
            let size: i64 = axes.iter().map(|&a| shape.get(a as usize).copied().unwrap_or(1)).product();
            let team = at.constant(*team, "i64");
            let (shape_list, axes_list) = (at.i64_list(shape), at.i64_list(axes));
            let ranked = format!("memref<{size}xi64>");
            let buffer = Emitter::value(at.op("memref.alloca", &[], &[&ranked], &[("operandSegmentSizes", "array<i32: 0, 0>")]));
            let members = Emitter::value(at.op("memref.cast", &[buffer], &["memref<*xi64>"], &[]));
            let callee = format!("@{}", RuntimeFunction::MeshGroup.symbol());
            at.op("func.call", &[team, shape_list, axes_list, members], &["i64"], &[("callee", &callee)]);
        }
    }
}

pub(crate) fn memref_of(tensor_type: &str) -> String {
    tensor_type.replacen("tensor<", "memref<", 1)
}

fn apply(module: OperationRef, plan: Plan) {
    let mut used: BTreeMap<String, RuntimeFunction> = BTreeMap::new();
    let mut names = OpNames::new(module);
    prepare_groups(module, &plan.lowerings, &mut names);
    if plan.lowerings.iter().any(|l| matches!(l.group, Group::Axes { .. })) {
        used.insert(RuntimeFunction::Op.symbol(), RuntimeFunction::Op);
    }
    for lowering in plan.lowerings {
        used.insert(lowering.function.symbol(), lowering.function);
        if matches!(lowering.group, Group::Axes { .. }) {
            used.insert(RuntimeFunction::MeshGroup.symbol(), RuntimeFunction::MeshGroup);
        }
        if lowering.along.is_some() {
            used.insert(RuntimeFunction::MeshPeer.symbol(), RuntimeFunction::MeshPeer);
        }
        lower(&lowering, &mut names);
        used.insert(RuntimeFunction::Wait.symbol(), RuntimeFunction::Wait);
        used.insert(RuntimeFunction::Op.symbol(), RuntimeFunction::Op);
    }
    for query in plan.queries {
        used.insert(query.function.symbol(), query.function);
        lower_query(&query);
    }
    for assert in plan.asserts {
        used.insert(RuntimeFunction::Assert.symbol(), RuntimeFunction::Assert);
        lower_assert(assert, &mut names);
    }
    declare(module, &used);
    names.define();
    drop_empty_program(module);
}

/// `dist.rank` / `dist.num_ranks` become `_bprt_prank` / `_bprt_nprocs` of
/// the mesh's team, cast to `index`.
fn lower_query(q: &RankQuery) {
    let Some(at) = Emitter::new(q.op) else { return };
    let Ok(result) = q.op.result(0) else { return };
    let team = at.constant(q.team, "i64");
    let call = at.op("func.call", &[team], &["i64"], &[("callee", &format!("@{}", q.function.symbol()))]);
    let index = Emitter::value(at.op("arith.index_cast", &[Emitter::value(call)], &["index"], &[]));
    replace_all_uses(result.into(), index);
    erase(q.op);
}

/// The names (`id` and location) of the lowered ops, as constant `i8`
/// globals that `_bprt_op` announces before each start, so a runtime error
/// names its op.
struct OpNames<'c, 'a> {
    module: OperationRef<'c, 'a>,
    /// Text -> global symbol, in creation order.
    globals: Vec<(String, String)>,
    /// Text -> its index in `globals`: one lookup per op, so the pass
    /// stays linear in the number of ops.
    index: HashMap<String, usize>,
    taken: std::collections::HashSet<String>,
}

impl<'c, 'a> OpNames<'c, 'a> {
    fn new(module: OperationRef<'c, 'a>) -> Self {
        let taken = collect_ops(module).into_iter().filter_map(|op| str_attr(op, "sym_name").map(str::to_string)).collect();
        Self { module, globals: Vec::new(), index: HashMap::new(), taken }
    }

    /// The global holding `text` (created on first use).
    fn symbol(&mut self, text: &str) -> (String, usize) {
        if let Some(&at) = self.index.get(text) {
            return (self.globals[at].1.clone(), text.len());
        }
        let mut n = self.globals.len();
        let symbol = loop {
            let candidate = format!("__bprt_op_{n}");
            if !self.taken.contains(&candidate) {
                break candidate;
            }
            n += 1;
        };
        self.taken.insert(symbol.clone());
        self.index.insert(text.to_string(), self.globals.len());
        self.globals.push((text.to_string(), symbol.clone()));
        (symbol, text.len())
    }

    /// Appends the globals to the module.
    fn define(&self) {
        let Ok(region) = self.module.region(0) else { return };
        let Some(body) = region.first_block() else { return };
        let Some(anchor) = body.first_operation() else { return };
        for (text, symbol) in &self.globals {
            let ty = format!("memref<{}xi8>", text.len());
            let operation = OperationBuilder::new("memref.global", self.module.location())
                .add_attributes(&[
                    (identifier(anchor, "sym_name"), known_attribute(anchor, &format!("\"{symbol}\""))),
                    (identifier(anchor, "sym_visibility"), known_attribute(anchor, "\"private\"")),
                    (identifier(anchor, "type"), known_attribute(anchor, &ty)),
                    (identifier(anchor, "initial_value"), bytes_attribute(anchor, text.as_bytes())),
                    (identifier(anchor, "constant"), known_attribute(anchor, "unit")),
                ])
                .build()
                .unwrap_or_else(|e| unreachable!("invalid op-name global: {e}"));
            body.append_operation(operation);
        }
    }
}

/// `dense<…> : tensor<N x i8>` of `bytes`, built from the bytes themselves
/// (a byte of text costs a byte, where printing and parsing a dense list
/// cost tens).
fn bytes_attribute<'c>(anchor: OperationRef<'c, '_>, bytes: &[u8]) -> melior::ir::Attribute<'c> {
    let shape = [bytes.len() as i64];
    // SAFETY: a live op and its context; the element type and shape outlive
    // the calls, and the attribute copies the bytes.
    unsafe {
        let context = mlir_sys::mlirOperationGetContext(anchor.to_raw());
        let element = mlir_sys::mlirIntegerTypeGet(context, 8);
        let tensor = mlir_sys::mlirRankedTensorTypeGet(1, shape.as_ptr(), element, mlir_sys::mlirAttributeGetNull());
        melior::ir::Attribute::from_raw(mlir_sys::mlirDenseElementsAttrInt8Get(tensor, bytes.len() as isize, bytes.as_ptr().cast()))
    }
}

/// `cf.assert %cond, "msg"` becomes `_bprt_assert(%cond as i64, "msg at
/// file:line:col")`, so a failed assert stops its rank by name with its
/// message (upstream's `printString` + `abort` loses the message in a
/// buffer and ends every in-process rank at once).
fn lower_assert(op: OperationRef, names: &mut OpNames) {
    let Some(at) = Emitter::new(op) else { return };
    let Ok(condition) = op.operand(0) else { return };
    let message = at_location(str_attr(op, "msg").unwrap_or("cf.assert"), op.location());
    let text = global_text(&at, names, &message);
    let flag = Emitter::value(at.op("arith.extui", &[condition], &["i64"], &[]));
    at.op("func.call", &[flag, text], &["i64"], &[("callee", &format!("@{}", RuntimeFunction::Assert.symbol()))]);
    erase(op);
}

/// How an error names an op: `'id' at file:line:col`.
fn op_name(op: OperationRef) -> String {
    // The two ends of a transfer announce the transfer they make together
    // (convert-dist-step-to-linalg's per-stage steps), each end its own op.
    let id = str_attr(op, crate::conversion::model_to_linalg::distributed::TRANSFER_ATTRIBUTE).or_else(|| str_attr(op, "id"));
    at_location(&format!("'{}'", id.map_or_else(|| name_of(op), str::to_string)), op.location())
}

/// `what at file:line:col`, printable ASCII only (the bytes go into an
/// `i8` global).
fn at_location(what: &str, location: Location) -> String {
    let location = location.to_string();
    let location = location.strip_prefix("loc(").and_then(|l| l.strip_suffix(')')).unwrap_or(&location).replace('"', "");
    let mut text = format!("{what} at {location}");
    text.retain(|c| c.is_ascii() && !c.is_ascii_control());
    text
}

/// `text` as an unranked `i8` memref (its global, made once).
fn global_text<'c, 'a>(at: &Emitter<'c, 'a>, names: &mut OpNames, text: &str) -> Value<'c, 'a> {
    let (symbol, len) = names.symbol(text);
    let global = Emitter::value(at.op("memref.get_global", &[], &[&format!("memref<{len}xi8>")], &[("name", &format!("@{symbol}"))]));
    Emitter::value(at.op("memref.cast", &[global], &["memref<*xi8>"], &[]))
}

/// Announces `text` as the op whose runtime calls follow (`_bprt_op`).
fn announce(at: &Emitter, names: &mut OpNames, text: &str) {
    let name = global_text(at, names, text);
    at.op("func.call", &[name], &["i64"], &[("callee", &format!("@{}", RuntimeFunction::Op.symbol()))]);
}

fn lower(l: &Lowering, names: &mut OpNames) {
    let Some(at) = Emitter::new(l.start) else { return };
    let op = l.start;
    let (Ok(input), Ok(result)) = (op.operand(0), op.result(1)) else { return };
    let input_type = type_string(input.r#type());
    let result_type = type_string(result.r#type());
    let element = l.function_element();

    // `read_only`: the runtime never writes the input, so bufferization
    // need not copy it for the call.
    let input_buffer = Emitter::value(at.op("bufferization.to_buffer", &[input], &[&memref_of(&input_type)], &[("read_only", "unit")]));
    let input_view = Emitter::value(at.op("memref.cast", &[input_buffer], &[&format!("memref<*x{element}>")], &[]));

    let output_sizes = dynamic_result_sizes(&at, l, input);
    let empty = Emitter::value(at.op("tensor.empty", &output_sizes, &[&result_type], &[]));
    let output_buffer = Emitter::value(at.op("bufferization.to_buffer", &[empty], &[&memref_of(&result_type)], &[]));
    let output_view = Emitter::value(at.op("memref.cast", &[output_buffer], &[&format!("memref<*x{element}>")], &[]));

    // The call and the stack lists it reads live in one allocation scope.
    let (scope, at) = {
        let (scope, inner) = at.alloca_scope();
        (scope, inner)
    };
    announce(&at, names, &op_name(op));
    let team = at.constant(l.team, "i64");
    let mut arguments = vec![team];
    match l.function {
        RuntimeFunction::CopyReshape(_) | RuntimeFunction::CopyPermute(_) => {
            arguments.push(input_view);
            let segments = i32_array_attr(op, "operandSegmentSizes").unwrap_or_default();
            let mut next = 1usize;
            for &len in segments.iter().skip(1) {
                let values: Vec<Value> = (next..next + len as usize).filter_map(|i| op.operand(i).ok()).collect();
                next += len as usize;
                arguments.push(at.list(&values, "index"));
            }
            if let Some(axes) = i64_array_attr(op, "axes") {
                arguments.push(at.i64_list(&axes));
            }
            arguments.push(output_view);
        }
        _ => {
            match &l.group {
                Group::None => {}
                Group::Ranks(ranks) => {
                    arguments.push(at.i64_list(ranks));
                }
                Group::Axes { shape, axes } => {
                    let (shape_list, axes_list) = (at.i64_list(shape), at.i64_list(axes));
                    let ranked = format!("memref<{}xi64>", l.group.size());
                    let buffer = Emitter::value(at.op("memref.alloca", &[], &[&ranked], &[("operandSegmentSizes", "array<i32: 0, 0>")]));
                    let members = Emitter::value(at.op("memref.cast", &[buffer], &["memref<*xi64>"], &[]));
                    let group = RuntimeFunction::MeshGroup;
                    at.op("func.call", &[team, shape_list, axes_list, members], &["i64"], &[("callee", &format!("@{}", group.symbol()))]);
                    arguments.push(members);
                }
            }
            arguments.push(input_view);
            arguments.push(output_view);
        }
    }
    match (&l.along, l.function) {
        (Some((shape, axis)), RuntimeFunction::SendRecv(_)) => {
            // The ranks that share every other coordinate with this one, at
            // the source and destination coordinates.
            let shape_list = at.i64_list(shape);
            let axis = at.constant(*axis, "i64");
            for (coordinate, _) in &l.scalars {
                let coordinate = at.constant(*coordinate, "i64");
                let callee = format!("@{}", RuntimeFunction::MeshPeer.symbol());
                arguments.push(Emitter::value(at.op("func.call", &[team, shape_list, axis, coordinate], &["i64"], &[("callee", &callee)])));
            }
        }
        _ => {
            for (value, ty) in &l.scalars {
                arguments.push(at.constant(*value, ty));
            }
        }
    }
    let symbol = l.function.symbol();
    let call = at.op("func.call", &arguments, &["i64"], &[("callee", &format!("@{symbol}"))]);
    at.op("memref.alloca_scope.return", &[Emitter::value(call)], &[], &[]);
    let handle = Emitter::value(scope);

    let Some(at_wait) = Emitter::new(l.wait) else { return };
    at_wait.op("func.call", &[handle], &["i64"], &[("callee", &format!("@{}", RuntimeFunction::Wait.symbol()))]);
    // The runtime may read the input until the wait returns (MPI's rule for
    // a nonblocking send buffer; the in-process all-reduce reads it there):
    // a read of the input after the wait keeps bufferization from writing
    // its buffer in place in between.
    at_wait.op("bufferization.to_buffer", &[input], &[&memref_of(&input_type)], &[("read_only", "unit")]);
    let tensor = Emitter::value(at_wait.op(
        "bufferization.to_tensor",
        &[output_buffer],
        &[&result_type],
        &[("restrict", "unit"), ("writable", "unit")],
    ));
    replace_all_uses(result.into(), tensor);
    erase(l.wait);
    erase(op);
}

impl Lowering<'_, '_> {
    fn function_element(&self) -> &'static str {
        match self.function {
            RuntimeFunction::AllReduce(e)
            | RuntimeFunction::ReduceScatter(e)
            | RuntimeFunction::AllGather(e)
            | RuntimeFunction::AllToAll(e)
            | RuntimeFunction::Broadcast(e)
            | RuntimeFunction::SendRecv(e)
            | RuntimeFunction::CopyReshape(e)
            | RuntimeFunction::CopyPermute(e)
            | RuntimeFunction::Matmul(e) => e.mlir(),
            RuntimeFunction::Wait
            | RuntimeFunction::NProcs
            | RuntimeFunction::PRank
            | RuntimeFunction::MeshGroup
            | RuntimeFunction::MeshPeer
            | RuntimeFunction::Op
            | RuntimeFunction::Assert => "i64",
        }
    }
}

/// Sizes of the result's dynamic dims: from `nl_shape` for the copies, from
/// the input (scaled along the axis for reduce-scatter and all-gather) for
/// collectives. Static result types get none, so `tensor.empty` is valid.
fn dynamic_result_sizes<'c, 'a>(at: &Emitter<'c, 'a>, l: &Lowering<'c, 'a>, input: Value<'c, 'a>) -> Vec<Value<'c, 'a>> {
    let op = l.start;
    let Ok(result) = op.result(1) else { return vec![] };
    let Some(shape) = tensor_shape(result.r#type()) else { return vec![] };
    let mut sizes = Vec::new();
    match l.function {
        RuntimeFunction::CopyReshape(_) | RuntimeFunction::CopyPermute(_) => {
            let segments = i32_array_attr(op, "operandSegmentSizes").unwrap_or_default();
            let before_nl_shape: i64 = segments[..segments.len().saturating_sub(1)].iter().sum();
            for (dim, extent) in shape.iter().enumerate() {
                if extent.is_none() {
                    if let Ok(size) = op.operand(before_nl_shape as usize + dim) {
                        sizes.push(size);
                    }
                }
            }
        }
        _ => {
            let n = l.group.size();
            let axis = int_attr(op, "axis").unwrap_or(0);
            for (dim, extent) in shape.iter().enumerate() {
                if extent.is_some() {
                    continue;
                }
                let index = at.constant(dim as i64, "index");
                let mut size = Emitter::value(at.op("tensor.dim", &[input, index], &["index"], &[]));
                if dim as i64 == axis {
                    let factor = at.constant(n, "index");
                    match l.function {
                        RuntimeFunction::ReduceScatter(_) => {
                            size = Emitter::value(at.op("arith.divui", &[size, factor], &["index"], &[]));
                        }
                        RuntimeFunction::AllGather(_) => {
                            size = Emitter::value(at.op(
                                "arith.muli",
                                &[size, factor],
                                &["index"],
                                &[("overflowFlags", "#arith.overflow<none>")],
                            ));
                        }
                        _ => {}
                    }
                }
                sizes.push(size);
            }
        }
    }
    sizes
}

/// Declares every used runtime function that the module does not declare
/// yet, at the start of the module, in symbol order.
fn declare(module: OperationRef, used: &BTreeMap<String, RuntimeFunction>) {
    let existing: Vec<String> = collect_ops(module)
        .into_iter()
        .filter(|op| name_of(*op) == "func.func")
        .filter_map(|op| str_attr(op, "sym_name").map(str::to_string))
        .collect();
    let Ok(region) = module.region(0) else { return };
    let Some(body) = region.first_block() else { return };
    let Some(first) = body.first_operation() else { return };
    let at = Emitter { block: body, before: Some(first), anchor: first, location: module.location() };
    for (symbol, function) in used {
        if existing.contains(symbol) {
            continue;
        }
        let region = Region::new();
        let operation = OperationBuilder::new("func.func", at.location)
            .add_attributes(&[
                (identifier(first, "sym_name"), known_attribute(first, &format!("\"{symbol}\""))),
                (identifier(first, "function_type"), known_attribute(first, &function.function_type())),
                (identifier(first, "sym_visibility"), known_attribute(first, "\"private\"")),
            ])
            .add_regions([region])
            .build()
            .unwrap_or_else(|e| unreachable!("invalid runtime declaration: {e}"));
        at.insert(operation);
    }
}

/// With every task lowered, the program's header and meshes describe
/// nothing left in the module.
pub(crate) fn drop_empty_program(module: OperationRef) {
    let ops = collect_ops(module);
    let dist: Vec<OperationRef> = ops.into_iter().filter(|op| dialect_of(&name_of(*op)) == "dist").collect();
    if dist.iter().all(|op| matches!(OpKind::of(*op), Some(OpKind::DistHeader | OpKind::DistMesh))) {
        for op in dist {
            erase(op);
        }
    }
}
