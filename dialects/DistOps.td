//===- DistOps.td - DistributedTaskIR: logical distribution -*- tablegen -*-===//
//
// The `dist` dialect says how a workload is distributed over a logical mesh:
// which rank owns which shard, which local task runs, which collective or
// point-to-point transfer connects ranks, and how async communication is
// waited on. Ranks are virtual; physical devices, routes, queues, timestamps
// and latencies are forbidden and the Rust verifier rejects them.
//
//===----------------------------------------------------------------------===//

#ifndef BLUEPRINT_DIST_OPS_TD
#define BLUEPRINT_DIST_OPS_TD

include "BlueprintBase.td"

def Dist_Dialect : Dialect {
  let name = "dist";
  // Inherent attributes stay attributes (not properties), so the generic
  // form is `{...}`, which the IRDL form of the dialect (stock
  // `mlir-opt --irdl-file`) reads.
  let usePropertiesForAttributes = 0;
  let cppNamespace = "::blueprint::dist";
  let summary = "DistributedTaskIR: a logical distributed program over a mesh";
  let useDefaultTypePrinterParser = 1;
  let description = [{
    A `dist` program lives in a module with one `dist.header` (schema and
    the digest of the ModelIR it came from) and one or more `dist.mesh`
    symbols. Tasks are ops whose kinds are mutually exclusive: local compute
    (`dist.compute`), the five collectives, point-to-point (`dist.p2p`),
    reshard and control. Dependencies are SSA operands (tensors or
    `!dist.token`s), so the task graph is a DAG by construction. The `deps`
    of one compute or control task share one type (the IRDL form binds one
    type per variadic group): a `dist.control` over one tensor turns it into
    a token to mix with others. Every task carries `lineage`: the id of the
    ModelIR op or value it came from.

    Which ranks run a task: all of the mesh, the ranks of a `slice` (one
    coordinate per mesh axis, `-1` for every coordinate of that axis), or an
    explicit `ranks` list. A collective's groups are an explicit list of
    `participants` (one group), or the mesh `axes` it spans: one group per
    combination of the other coordinates within the slice, so no rank list
    grows with the mesh. A point-to-point transfer names two ranks, or two
    coordinates `along` one axis (every rank of the slice with the source
    coordinate sends to the rank that differs only in that coordinate).

    Communication can be asynchronous in the manner of IMEX's distruntime:
    a `*_start` op (and the two redistribution copies) returns an
    `!dist.async_handle` and a result; the result may only be used after a
    `dist.wait` on the handle, and each handle is waited exactly once.
    As with MPI's nonblocking operations, a runtime may read the input's
    buffer at any time until the wait returns (Blueprint's in-process
    all-reduce reads every member's input there, without a copy at the
    start): a lowering keeps that buffer alive and unmodified until the
    wait (`lower-dist-to-runtime` reads the input again after it).
  }];
}

def Dist_AsyncHandle : TypeDef<Dist_Dialect, "AsyncHandle"> {
  let mnemonic = "async_handle";
  let summary = "Opaque handle of an in-flight asynchronous operation";
  let description = [{
    Returned by `*_start` ops and the redistribution copies; consumed by
    exactly one `dist.wait`. A runtime lowering gives it a concrete meaning.
  }];
}

def Dist_Token : TypeDef<Dist_Dialect, "Token"> {
  let mnemonic = "token";
  let summary = "Dependency-only value ordering two tasks";
  let description = [{
    Produced by tasks that have no tensor result (facts-only compute,
    control) and consumed as a dependency operand.
  }];
}

def Dist_TeamAttr : AnyAttrOf<[I64Attr, FlatSymbolRefAttr]>;

class Dist_Op<string mnemonic, list<Trait> traits = []>
    : Op<Dist_Dialect, mnemonic, traits>;

// An op naming a mesh with `mesh = @m`; MLIR checks that the symbol is a
// `dist.mesh` (the Rust verifier checks the mesh's own rules).
class Dist_MeshUserOp<string mnemonic, list<Trait> traits = []>
    : Dist_Op<mnemonic, !listconcat(traits, [DeclareOpInterfaceMethods<SymbolUserOpInterface>])> {
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::verifySymbolUses(::mlir::SymbolTableCollection &symbolTable) {
      if (!symbolTable.lookupNearestSymbolFrom<::blueprint::dist::MeshOp>(*this, getMeshAttr()))
        return emitOpError("'mesh' @") << getMesh() << " does not name a 'dist.mesh'";
      return ::mlir::success();
    }
  }];
}

// Tasks do work, move data or order other tasks: never erased or merged.
class Dist_TaskOp<string mnemonic, list<Trait> traits = []>
    : Dist_MeshUserOp<mnemonic, !listconcat(traits, [Blueprint_TaskEffects])>;

// Attributes shared by every task. An unrolled task instance also names
// its block, stage, chunk and microbatch.
defvar Dist_TaskAttrs = (ins StrAttr:$id, FlatSymbolRefAttr:$mesh,
                             Blueprint_Phase:$phase, StrAttr:$lineage,
                             OptionalAttr<Blueprint_Count>:$block,
                             OptionalAttr<Blueprint_Count>:$stage,
                             OptionalAttr<Blueprint_Count>:$chunk,
                             OptionalAttr<Blueprint_Count>:$microbatch);
// The ranks of a task, when not the whole mesh.
defvar Dist_Placement = (ins OptionalAttr<DenseI64ArrayAttr>:$slice,
                             OptionalAttr<DenseI64ArrayAttr>:$ranks);
defvar Dist_PlacementFormat = "(`slice` $slice^)? (`ranks` $ranks^)?";
// A TP collective tiled with the linear it feeds or drains: the id of the
// linear's task in the same phase (the weight-gradient task for a
// re-communication), the tile count and the overlap schedule. All three or
// none.
defvar Dist_Tiling = (ins OptionalAttr<StrAttr>:$tiled_with,
                          OptionalAttr<Blueprint_PositiveCount>:$tiles,
                          OptionalAttr<Blueprint_TileOverlap>:$overlap);
defvar Dist_TilingFormat = "(`tiled_with` $tiled_with^)? (`tiles` `=` $tiles^)? (`overlap` `=` $overlap^)?";

//===----------------------------------------------------------------------===//
// Program structure
//===----------------------------------------------------------------------===//

def Dist_HeaderOp : Dist_Op<"header"> {
  let summary = "Schema and source digest of the distributed program";
  let description = [{
    Exactly one per module that holds `dist` ops. `model` is the digest of
    the ModelIR the program was derived from.

    ```mlir
    dist.header schema "blueprint.dist" version "1.0" model "sha256:..."
    ```
  }];
  let arguments = (ins StrAttr:$schema_name, StrAttr:$schema_version,
                       StrAttr:$model_digest);
  let assemblyFormat = "`schema` $schema_name `version` $schema_version `model` $model_digest attr-dict";
}

def Dist_MeshOp : Dist_Op<"mesh", [Symbol]> {
  let summary = "A logical mesh of virtual ranks with named axes";
  let description = [{
    A symbol naming a Cartesian rank space. Ranks are numbered row-major
    over `shape`, from 0 to the product of the axis sizes minus one. Axis
    names are unique and sizes positive.

    ```mlir
    dist.mesh @tp(axes = ["tp"], shape = [8])
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrArrayAttr:$axes,
                       DenseI64ArrayAttr:$shape);
  let assemblyFormat = "$sym_name `(` `axes` `=` $axes `,` `shape` `=` $shape `)` attr-dict";
}

def Dist_ValueOp : Dist_MeshUserOp<"value"> {
  let summary = "A distributed boundary value with its sharding";
  let description = [{
    Introduces a value entering the program, with its logical (global)
    tensor type and its sharding over a mesh: `split` has one list of mesh
    axes per tensor dimension; mesh axes that split nothing replicate.
    `owners`, when present, restricts the ranks that hold it. `lineage`
    names the ModelIR value it specialises.

    ```mlir
    %x = dist.value "x" on @tp split [[], ["tp"], []] {lineage = "block.in"} : tensor<4x2048x6144xf16>
    ```
  }];
  let arguments = (ins StrAttr:$id, FlatSymbolRefAttr:$mesh,
                       Blueprint_SplitAxesAttr:$split_axes, StrAttr:$lineage,
                       OptionalAttr<DenseI64ArrayAttr>:$owners);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$id `on` $mesh `split` $split_axes (`owners` $owners^)? attr-dict `:` type($result)";
}

def Dist_OutputOp : Dist_MeshUserOp<"output"> {
  let summary = "A distributed boundary output with its sharding";
  let description = [{
    ```mlir
    dist.output %y "y" on @tp split [[], [], []] {lineage = "block.out"} : tensor<4x2048x6144xf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$value, StrAttr:$id,
                       FlatSymbolRefAttr:$mesh,
                       Blueprint_SplitAxesAttr:$split_axes, StrAttr:$lineage);
  let assemblyFormat = "$value $id `on` $mesh `split` $split_axes attr-dict `:` type($value)";
}

def Dist_MemoryOp : Dist_MeshUserOp<"memory"> {
  let summary = "Per-rank memory one class of state needs";
  let description = [{
    Aggregate memory facts of the program: `bytes` each rank of the mesh
    (or of the `slice`) needs for one class of state (weights, activations
    kept for the backward pass, gradients, optimizer state, KV cache, ...).
    Planning turns each into a buffer of exactly that size. State sharded
    over a group (the distributed optimizer's gradients and state over DP)
    gives the group's total in `bytes` and the group size in `shared_by`:
    each rank holds `bytes / shared_by`, which need not be a whole number.
    In a whole training step, the facts of one stage name the `stage` (and
    its `slice`), and the facts of one block (every block is alike) name
    the `block`.

    ```mlir
    dist.memory "mem.weight" on @tp weight = 113295360 {lineage = "block"}
    dist.memory "s0.mem.optimizer_state" on @world slice [-1, 0, -1] stage 0 optimizer_state = 679477248 shared_by = 12 {lineage = "block"}
    ```
  }];
  let arguments = (ins StrAttr:$id, FlatSymbolRefAttr:$mesh, Blueprint_MemoryKind:$kind,
                       Blueprint_Count:$bytes, StrAttr:$lineage,
                       OptionalAttr<Blueprint_PositiveCount>:$shared_by,
                       OptionalAttr<DenseI64ArrayAttr>:$slice,
                       OptionalAttr<Blueprint_Count>:$stage,
                       OptionalAttr<Blueprint_Count>:$block);
  let assemblyFormat = "$id `on` $mesh (`slice` $slice^)? (`stage` $stage^)? (`block` $block^)? $kind `=` $bytes (`shared_by` `=` $shared_by^)? attr-dict";
}

//===----------------------------------------------------------------------===//
// The whole training step: a pipeline, its chunks and their schedule
//===----------------------------------------------------------------------===//

def Dist_PipelineOp : Dist_MeshUserOp<"pipeline", [Symbol]> {
  let summary = "A training step pipelined over one mesh axis";
  let description = [{
    Names the step: `stages` pipeline stages along mesh axis `along`, each
    holding `chunks` model chunks (Megatron's interleaving), `blocks`
    decoder blocks in all, run over `microbatches` microbatches in the
    order `schedule` gives. The chunks (`dist.chunk`) hold the block
    template; the per-stage slot orders are `dist.schedule` ops.

    An `unrolled` pipeline (after `dist-unroll-schedule`) has no chunks or
    schedules: every task instance is an op of its own in `func.func @step_tasks`,
    naming its block, stage, chunk and microbatch, in each stage's order.

    ```mlir
    dist.pipeline @step on @world along "pp" schedule = interleaved_one_f_one_b
        stages = 8 chunks = 3 microbatches = 64 blocks = 96
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, FlatSymbolRefAttr:$mesh, StrAttr:$along,
                       Blueprint_PipelineSchedule:$schedule, Blueprint_PositiveCount:$stages,
                       Blueprint_PositiveCount:$chunks, Blueprint_PositiveCount:$microbatches,
                       Blueprint_PositiveCount:$blocks, UnitAttr:$unrolled);
  let assemblyFormat = !strconcat("$sym_name `on` $mesh `along` $along `schedule` `=` $schedule",
      " `stages` `=` $stages `chunks` `=` $chunks `microbatches` `=` $microbatches",
      " `blocks` `=` $blocks (`unrolled` $unrolled^)? attr-dict");
}

def Dist_ChunkOp : Dist_Op<"chunk", [Symbol]> {
  let summary = "One model chunk of a pipeline stage: the block template once";
  let description = [{
    Chunk `chunk` of stage `stage` holds blocks `first_block` ..
    `first_block + blocks - 1` (Megatron's assignment: chunk `c` of stage
    `s` starts at block `(c·p + s)·L/(p·v)`; in an uneven pipeline, where
    `p` does not divide `L`, the first `L mod p` stages hold `⌈L/p⌉`
    blocks and the others one fewer, missing from their last chunk, which
    may then hold none). The block template appears
    once: the `template` region holds one block's tasks for one microbatch
    (forward, then recompute, re-communication and backward) and its
    once-per-step tasks (`phase = optimizer`: the data-parallel gradient
    reduction and the optimizer step); the `boundary` region holds the chunk's cross-stage transfers of
    one microbatch (`dist.p2p` along the pipeline axis: the activation
    forward, the activation gradient backward). Both regions take the
    token of what precedes them (the block's input). In the template each
    task waits for the tasks whose results its ModelIR op reads (the
    block's dataflow, a DAG; the block's input when it reads none of
    them), and the region yields the tokens no task of it waits for; the
    boundary's transfers form a chain and it yields its last.

    ```mlir
    dist.chunk @s0.c0 of @step stage = 0 chunk = 0 first_block = 0 blocks = 4 {
    ^bb0(%in: !dist.token):
      %t = dist.compute "attn.ln.fwd" on @world slice [-1, 0, -1] phase = forward vector layer_norm(%in : !dist.token)
             ops = 1 read = 2 write = 1 {lineage = "attn.ln"} : !dist.token
      dist.yield %t : !dist.token
    } boundary {
    ^bb0(%in: !dist.token):
      %s = dist.p2p %in on @world along "pp" from 0 to 1 phase = forward bytes = 50331648
             {id = "s0.c0.send", lineage = "block.out"} : !dist.token
      dist.yield %s : !dist.token
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, FlatSymbolRefAttr:$pipeline,
                       Blueprint_Count:$stage, Blueprint_Count:$chunk,
                       Blueprint_Count:$first_block, Blueprint_Count:$blocks);
  let regions = (region SizedRegion<1>:$template, SizedRegion<1>:$boundary);
  let assemblyFormat = !strconcat("$sym_name `of` $pipeline `stage` `=` $stage `chunk` `=` $chunk",
      " `first_block` `=` $first_block `blocks` `=` $blocks $template `boundary` $boundary attr-dict");
}

def Dist_YieldOp : Dist_Op<"yield", [Pure, Terminator, ReturnLike, HasParent<"ChunkOp">]> {
  let summary = "End of a chunk region: the tokens of its last tasks";
  let description = [{
    ```mlir
    dist.yield %t : !dist.token
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

def Dist_ScheduleOp : Dist_Op<"schedule"> {
  let summary = "The ordered slots one pipeline stage runs";
  let description = [{
    `slots` lists stage `stage`'s work in order as (microbatch, chunk,
    direction) triples, direction 0 forward and 1 backward: a slot runs the
    chunk's template for that microbatch over the chunk's blocks (forward in
    block order, backward in reverse), then its boundary transfers of that
    direction. The once-per-step tasks run after the last slot. The program
    grows with the blocks plus stages x chunks x microbatches, never with
    their product; `dist-unroll-schedule` expands it into every task.

    ```mlir
    dist.schedule @step stage = 3 slots = [0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 1]
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$pipeline, Blueprint_Count:$stage,
                       DenseI64ArrayAttr:$slots);
  let assemblyFormat = "$pipeline `stage` `=` $stage `slots` `=` $slots attr-dict";
}

//===----------------------------------------------------------------------===//
// Task bodies: local compute, reshard, control
//===----------------------------------------------------------------------===//

def Dist_ComputeOp : Dist_TaskOp<"compute"> {
  let summary = "Local compute executed independently on the mesh's ranks";
  let description = [{
    One primitive invocation on every rank of the mesh (or of the `slice`,
    or the `ranks` subset), with its exact per-rank work: `ops` operations,
    `read` and `write` bytes. The engine class and the primitive follow the
    phase. The task's completion is its token; a task that produces a
    boundary value (such as the block output at the forward terminal) also
    returns it as `value`. Work split evenly over a group of `shared_by`
    ranks (a sharded optimizer step) states the group's totals; each rank
    does `1/shared_by` of them.

    ```mlir
    %t = dist.compute "fw.qkv" on @tp phase = forward matrix matmul(%x : tensor<4x2048x6144xf16>)
           ops = 120795955200 read = 125829120 write = 37748736 {lineage = "attn.qkv"} : !dist.token
    ```
  }];
  let arguments = !con((ins Variadic<AnyType>:$deps), Dist_TaskAttrs,
                       (ins Blueprint_Engine:$engine, Blueprint_Primitive:$primitive,
                            Blueprint_Count:$ops, Blueprint_Count:$read_bytes,
                            Blueprint_Count:$write_bytes,
                            OptionalAttr<Blueprint_PositiveCount>:$shared_by),
                       Dist_Placement);
  let results = (outs Dist_Token:$token, Optional<AnyRankedTensor>:$value);
  let assemblyFormat = !strconcat("$id `on` $mesh ", Dist_PlacementFormat, " `phase` `=` $phase $engine $primitive (`(` $deps^ `:` type($deps) `)`)?", " `ops` `=` $ops `read` `=` $read_bytes `write` `=` $write_bytes", " (`shared_by` `=` $shared_by^)? attr-dict `:` type(results)");
}

def Dist_ReshardOp : Dist_TaskOp<"reshard", [AllTypesMatch<["input", "result"]>]> {
  let summary = "Change the sharding of a value";
  let description = [{
    Moves a value from one sharding to another over the same mesh; the
    logical tensor type does not change.

    ```mlir
    %y = dist.reshard %x "rs0" on @tp phase = forward from [["tp"], []] to [[], []] {lineage = "x"} : tensor<2048x6144xf16>
    ```
  }];
  let arguments = !con((ins AnyRankedTensor:$input), Dist_TaskAttrs,
                       (ins Blueprint_SplitAxesAttr:$from_split_axes,
                            Blueprint_SplitAxesAttr:$to_split_axes));
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = !strconcat("$input $id `on` $mesh `phase` `=` $phase `from` $from_split_axes", " `to` $to_split_axes attr-dict `:` type($input)");
}

def Dist_ControlOp : Dist_MeshUserOp<"control", [Pure]> {
  let summary = "Dependency-only coordination task";
  let description = [{
    Joins its dependencies into one token; does no work and moves no data,
    so it has no effects (an unused join may be erased). Over a single
    tensor it turns that value into a token.

    ```mlir
    %t = dist.control "stage.fw_done" on @tp phase = forward(%a, %b : !dist.token, !dist.token) {lineage = "block"}
    ```
  }];
  let arguments = !con((ins Variadic<AnyType>:$deps), Dist_TaskAttrs);
  let results = (outs Dist_Token:$token);
  let assemblyFormat = "$id `on` $mesh `phase` `=` $phase (`(` $deps^ `:` type($deps) `)`)? attr-dict";
}

//===----------------------------------------------------------------------===//
// Communication: collectives and point-to-point, sync and async start forms
//===----------------------------------------------------------------------===//

// `input` is the value communicated (a tensor, or a token for facts-only
// programs); `deps` are extra ordering dependencies. Local work a
// communication does on each rank (reduction operations and bytes it reads
// and writes) defaults to 0.
defvar Dist_CommLocalWork = (ins OptionalAttr<Blueprint_Count>:$ops,
                                 OptionalAttr<Blueprint_Count>:$read_bytes,
                                 OptionalAttr<Blueprint_Count>:$write_bytes);

// Every collective and point-to-point transfer, sync or async.
class Dist_CommunicationOp<string mnemonic, list<Trait> traits = []>
    : Dist_TaskOp<mnemonic, traits>;

// The five collectives, sync or async: `participants` or mesh `axes` name
// the groups.
class Dist_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Dist_CommunicationOp<mnemonic, traits>;

// Whether the result type is the input type (inferred), or both are spelled.
class Dist_CommTypes<bit sameType> {
  list<Trait> traits = !if(sameType, [AllTypesMatch<["input", "result"]>], []);
  string format = !if(sameType, "type($input)", "type($input) `->` type($result)");
}

class Dist_CommArguments<dag extra> {
  dag value = !con((ins AnyType:$input, Variadic<Dist_Token>:$deps),
                   Dist_TaskAttrs, (ins Blueprint_Count:$message_bytes), extra,
                   Dist_CommLocalWork);
}
defvar Dist_DepsFormat = "(`after` `(` $deps^ `)`)?";

// `operands`: the rest of the `_start` example after `%x` (a complete op,
// so the example parses).
class Dist_AsyncStartFormDoc<string mnemonic, string operands> {
  string value = "\n    The `_start` form begins the communication and returns an async handle\n"
      # "    with the result; the result may be used only after `dist.wait` on the\n"
      # "    handle:\n\n    ```mlir\n    %h, %y = dist." # mnemonic # "_start %x " # operands # "\n"
      # "    dist.wait %h\n    ```\n";
}

// A collective and its `_start` form. `extra` are the kind's own
// attributes, `extraFormat` where they appear; `startExample` completes the
// `_start` form's example.
multiclass Dist_Collective<string mnemonic, string summary_, string doc, dag extra,
                           string extraFormat, bit sameType, string startExample> {
  defvar types = Dist_CommTypes<sameType>;
  defvar fmt = !strconcat("$input ", Dist_DepsFormat, " `on` $mesh ", Dist_PlacementFormat, " (`over` $participants^)? (`axes` $mesh_axes^)? ", extraFormat, " ", Dist_TilingFormat, " `phase` `=` $phase `bytes` `=` $message_bytes attr-dict `:` ", types.format);
  defvar args = Dist_CommArguments<!con(
      (ins OptionalAttr<DenseI64ArrayAttr>:$participants, OptionalAttr<StrArrayAttr>:$mesh_axes),
      Dist_Placement, extra, Dist_Tiling)>.value;
  def "" : Dist_CollectiveOp<mnemonic, types.traits> {
    let summary = summary_;
    let description = doc;
    let arguments = args;
    let results = (outs AnyType:$result);
    let assemblyFormat = fmt;
  }
  def Start : Dist_CollectiveOp<mnemonic # "_start", types.traits> {
    let summary = "Start (async): " # summary_;
    let description = !strconcat(doc, Dist_AsyncStartFormDoc<mnemonic, startExample>.value);
    let arguments = args;
    let results = (outs Dist_AsyncHandle:$handle, AnyType:$result);
    let assemblyFormat = fmt;
  }
}

defm Dist_AllReduce : Dist_Collective<"all_reduce",
    "All-reduce over the participating ranks", [{
    Every participant ends with the `reduction` of all participants' inputs.
    The groups are the explicit `participants` (distinct ranks of the mesh)
    or one group per combination of the coordinates not in `axes`;
    `message_bytes` is the logical size of the reduced tensor (no ring or
    algorithm factor).

    ```mlir
    %y = dist.all_reduce %x on @tp over [0, 1, 2, 3] reduction = sum phase = forward bytes = 100663296
           {id = "attn.tp_exit.fwd", lineage = "attn.dropout"} : tensor<4x2048x6144xf16>
    %g = dist.all_reduce %t on @world slice [-1, 2, -1] axes ["dp"] reduction = sum phase = weight_gradient
           bytes = 453083136 {id = "dp.grad_reduce", lineage = "block"} : !dist.token
    ```

    Every collective may be *tiled* with the linear it feeds or drains
    (`mapping.tp_overlap`, Calculon's `LinearOverlapped`): `tiled_with`
    names the compute task of that linear in the same phase (its weight
    gradient for a `recommunication`), `tiles` the pieces the linear runs
    in, `overlap` the schedule (`ring`: each piece's transfer hides behind
    the next piece's compute; `pipe`: the same plus one exposed piece). A
    tiled collective's local work is its reduction only.

    ```mlir
    %r = dist.all_reduce %y on @tp over [0, 1, 2, 3] reduction = sum tiled_with "attn.proj.fwd" tiles = 4
           overlap = ring phase = forward bytes = 100663296 {id = "attn.tp_exit.fwd", lineage = "attn.dropout",
           ops = 75497472} : tensor<4x2048x6144xf16>
    ```
}], (ins Blueprint_Reduction:$reduction, OptionalAttr<I64Attr>:$axis),
    "`reduction` `=` $reduction", 1,
    "on @tp over [0, 1, 2, 3] reduction = sum phase = forward bytes = 100663296\n"
    # "           {id = \"attn.tp_exit.fwd\", lineage = \"attn.dropout\"} : tensor<4x2048x6144xf16>">;

defm Dist_ReduceScatter : Dist_Collective<"reduce_scatter",
    "Reduce-scatter over the participating ranks", [{
    Reduces the participants' inputs and leaves each participant one slice
    along `axis` (default 0).

    ```mlir
    %y = dist.reduce_scatter %x on @tp over [0, 1] reduction = sum phase = forward bytes = 100663296
           {id = "fw.rs0", lineage = "attn.proj"} : tensor<4x2048x6144xf16> -> tensor<4x1024x6144xf16>
    ```
}], (ins Blueprint_Reduction:$reduction, OptionalAttr<I64Attr>:$axis),
    "`reduction` `=` $reduction", 0,
    "on @tp over [0, 1] reduction = sum phase = forward bytes = 100663296\n"
    # "           {id = \"fw.rs0\", lineage = \"attn.proj\"} : tensor<4x2048x6144xf16> -> tensor<4x1024x6144xf16>">;

defm Dist_AllGather : Dist_Collective<"all_gather",
    "All-gather over the participating ranks", [{
    Concatenates the participants' inputs along `axis` (default 0) on every
    participant. Takes no reduction.

    ```mlir
    %y = dist.all_gather %x on @tp over [0, 1] phase = forward bytes = 100663296
           {id = "fw.ag0", lineage = "ln1"} : tensor<4x1024x6144xf16> -> tensor<4x2048x6144xf16>
    ```
}], (ins OptionalAttr<I64Attr>:$axis), "", 0,
    "on @tp over [0, 1] phase = forward bytes = 100663296\n"
    # "           {id = \"fw.ag0\", lineage = \"ln1\"} : tensor<4x1024x6144xf16> -> tensor<4x2048x6144xf16>">;

defm Dist_AllToAll : Dist_Collective<"all_to_all",
    "All-to-all exchange over the participating ranks", [{
    Each participant sends one slice of its input along `axis` to every
    other participant. Takes no reduction.

    ```mlir
    %y = dist.all_to_all %x on @tp over [0, 1] phase = forward bytes = 1024
           {id = "a2a0", lineage = "moe.dispatch"} : tensor<8x64xf32>
    ```
}], (ins OptionalAttr<I64Attr>:$axis), "", 1,
    "on @tp over [0, 1] phase = forward bytes = 1024\n"
    # "           {id = \"a2a0\", lineage = \"moe.dispatch\"} : tensor<8x64xf32>">;

defm Dist_Broadcast : Dist_Collective<"broadcast",
    "Broadcast from a root rank to the participating ranks", [{
    `root` must be one of the participants. Takes no reduction.

    ```mlir
    %y = dist.broadcast %x on @tp over [0, 1, 2, 3] root = 0 phase = forward bytes = 4096
           {id = "bc0", lineage = "embed"} : tensor<1024xf32>
    ```
}], (ins I64Attr:$root), "`root` `=` $root", 1,
    "on @tp over [0, 1, 2, 3] root = 0 phase = forward bytes = 4096\n"
    # "           {id = \"bc0\", lineage = \"embed\"} : tensor<1024xf32>">;

// Point-to-point and its `_start` form.
multiclass Dist_PointToPoint<string summary_, string doc, string startExample> {
  defvar fmt = !strconcat("$input ", Dist_DepsFormat, " `on` $mesh (`slice` $slice^)? (`along` $along^)?", " `from` $source `to` $dest `phase` `=` $phase `bytes` `=` $message_bytes attr-dict `:` type($input)");
  defvar args = Dist_CommArguments<(ins I64Attr:$source, I64Attr:$dest,
                                             OptionalAttr<StrAttr>:$along,
                                             OptionalAttr<DenseI64ArrayAttr>:$slice)>.value;
  def "" : Dist_CommunicationOp<"p2p", [AllTypesMatch<["input", "result"]>]> {
    let summary = summary_;
    let description = doc;
    let arguments = args;
    let results = (outs AnyType:$result);
    let assemblyFormat = fmt;
  }
  def Start : Dist_CommunicationOp<"p2p_start", [AllTypesMatch<["input", "result"]>]> {
    let summary = "Start (async): " # summary_;
    let description = doc # Dist_AsyncStartFormDoc<"p2p", startExample>.value;
    let arguments = args;
    let results = (outs Dist_AsyncHandle:$handle, AnyType:$result);
    let assemblyFormat = fmt;
  }
}

defm Dist_P2P : Dist_PointToPoint<"Point-to-point transfer from one rank to another", [{
    Moves `input` from rank `source` to rank `dest` (distinct ranks of the
    mesh); the result is defined on `dest`. With `along "<axis>"`, `source`
    and `dest` are coordinates on that axis: every rank of the slice whose
    coordinate is `source` sends to the rank that differs from it only in
    that coordinate, which is `dest` (a pipeline stage boundary).

    ```mlir
    %y = dist.p2p %x on @pp from 0 to 1 phase = forward bytes = 100663296
           {id = "pp.send0", lineage = "block.out"} : tensor<4x2048x6144xf16>
    %z = dist.p2p %t on @world along "pp" from 2 to 3 phase = forward bytes = 50331648
           {id = "s2.c0.send", lineage = "block.out"} : !dist.token
    ```
}], "on @pp from 0 to 1 phase = forward bytes = 100663296\n"
    # "           {id = \"pp.send0\", lineage = \"block.out\"} : tensor<4x2048x6144xf16>">;

def Dist_WaitOp : Dist_Op<"wait", [Blueprint_TaskEffects]> {
  let summary = "Wait for an asynchronous operation to complete";
  let description = [{
    After the wait, the results of the op that produced `handle` may be
    used, and the op's input is no longer read. Each handle is waited
    exactly once.

    ```mlir
    dist.wait %h
    ```
  }];
  let arguments = (ins Dist_AsyncHandle:$handle);
  let assemblyFormat = "$handle attr-dict";
}

//===----------------------------------------------------------------------===//
// Redistribution copies (distruntime)
//===----------------------------------------------------------------------===//

class Dist_CopyOp<string mnemonic>
    : Dist_Op<mnemonic, [AttrSizedOperandSegments, Blueprint_TaskEffects]>;

def Dist_CopyReshapeOp : Dist_CopyOp<"copy_reshape"> {
  let summary = "Async copy of a local shard into the local shard of a reshaped array";
  let description = [{
    `l_array` is this rank's part of a distributed array of global shape
    `g_shape` starting at `l_offs`; the op starts copying the data needed
    for the local part (`n_offs`, `n_shape`) of the reshaped array of
    global shape `n_g_shape`. The input is not modified. `team` is the team
    (an integer) or mesh (a symbol) owning the array. Returns a handle and
    the new local tensor, usable after `dist.wait`.

    ```mlir
    %h, %out = dist.copy_reshape %local g_shape %g0, %g1 l_offs %o0, %o1
                 to n_g_shape %ng0 n_offs %no0 n_shape %ns0 {team = 22 : i64}
               : tensor<?x?xi64> -> tensor<?xi64>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$l_array, Variadic<Index>:$g_shape,
                       Variadic<Index>:$l_offsets, Variadic<Index>:$ng_shape,
                       Variadic<Index>:$nl_offsets, Variadic<Index>:$nl_shape,
                       Dist_TeamAttr:$team);
  let results = (outs Dist_AsyncHandle:$handle, AnyRankedTensor:$n_array);
  let assemblyFormat = !strconcat("$l_array `g_shape` $g_shape `l_offs` $l_offsets `to` `n_g_shape` $ng_shape", " `n_offs` $nl_offsets `n_shape` $nl_shape attr-dict `:` type($l_array) `->` type($n_array)");
}

def Dist_CopyPermuteOp : Dist_CopyOp<"copy_permute"> {
  let summary = "Async copy of a local shard into the local shard of a permuted array";
  let description = [{
    Like `dist.copy_reshape`, for the array whose dimensions are permuted by
    `axes` (a permutation of `0..rank`); the new global shape follows from
    `g_shape` and `axes`.

    ```mlir
    %h, %out = dist.copy_permute %local g_shape %g0, %g1 l_offs %o0, %o1
                 n_offs %no0, %no1 n_shape %ns0, %ns1 axes [1, 0] {team = 22 : i64}
               : tensor<?x?xi64> -> tensor<?x?xi64>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$l_array, Variadic<Index>:$g_shape,
                       Variadic<Index>:$l_offsets, Variadic<Index>:$nl_offsets,
                       Variadic<Index>:$nl_shape, Dist_TeamAttr:$team,
                       DenseI64ArrayAttr:$axes);
  let results = (outs Dist_AsyncHandle:$handle, AnyRankedTensor:$n_array);
  let assemblyFormat = !strconcat("$l_array `g_shape` $g_shape `l_offs` $l_offsets `n_offs` $nl_offsets", " `n_shape` $nl_shape `axes` $axes attr-dict `:` type($l_array) `->` type($n_array)");
}

//===----------------------------------------------------------------------===//
// Rank queries (team member and team size in the distruntime RFC)
//===----------------------------------------------------------------------===//

def Dist_RankOp : Dist_MeshUserOp<"rank", [Pure]> {
  let summary = "This rank's number in a mesh";
  let description = [{
    The running rank's row-major number in the mesh, so a program can build
    rank-dependent data.

    ```mlir
    %r = dist.rank on @world
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh);
  let results = (outs Index:$rank);
  let assemblyFormat = "`on` $mesh attr-dict";
}

def Dist_NumRanksOp : Dist_MeshUserOp<"num_ranks", [Pure]> {
  let summary = "The number of ranks of a mesh";
  let description = [{
    ```mlir
    %n = dist.num_ranks on @world
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh);
  let results = (outs Index:$count);
  let assemblyFormat = "`on` $mesh attr-dict";
}

#endif // BLUEPRINT_DIST_OPS_TD
