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
  let cppNamespace = "::blueprint::dist";
  let summary = "DistributedTaskIR: a logical distributed program over a mesh";
  let description = [{
    A `dist` program lives in a module with one `dist.header` (schema and
    the digest of the ModelIR it came from) and one or more `dist.mesh`
    symbols. Tasks are ops whose kinds are mutually exclusive: local compute
    (`dist.compute`), the five collectives, point-to-point (`dist.p2p`),
    reshard and control. Dependencies are SSA operands (tensors or
    `!dist.token`s), so the task graph is a DAG by construction. IRDL binds
    one type per variadic group, so the `deps` of one compute or control
    task share one type: a `dist.control` over one tensor turns it into a
    token to mix with others. Every task
    carries `lineage`: the id of the ModelIR op or value it came from.

    Communication can be asynchronous in the manner of IMEX's distruntime:
    a `*_start` op (and the two redistribution copies) returns an
    `!dist.async_handle` and a result; the result may only be used after a
    `dist.wait` on the handle, and each handle is waited exactly once.
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

def Dist_Engine : Blueprint_StrEnumAttr<"engine class", ["matrix", "vector"]>;

def Dist_TeamAttr : AnyAttrOf<[I64Attr, FlatSymbolRefAttr]>;

class Dist_Op<string mnemonic, list<Trait> traits = []>
    : Op<Dist_Dialect, mnemonic, traits>;

// Attributes shared by every task.
defvar Dist_TaskAttrs = (ins StrAttr:$id, FlatSymbolRefAttr:$mesh,
                             Blueprint_Phase:$phase, StrAttr:$lineage);

//===----------------------------------------------------------------------===//
// Program structure
//===----------------------------------------------------------------------===//

def Dist_HeaderOp : Dist_Op<"header"> {
  let summary = "Schema and source digest of the distributed program";
  let description = [{
    Exactly one per module that holds `dist` ops. `model_digest` is the
    digest of the ModelIR the program was derived from.

    ```mlir
    "dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0",
                     model_digest = "sha256:..."} : () -> ()
    ```
  }];
  let arguments = (ins StrAttr:$schema_name, StrAttr:$schema_version,
                       StrAttr:$model_digest);
}

def Dist_MeshOp : Dist_Op<"mesh"> {
  let summary = "A logical mesh of virtual ranks with named axes";
  let description = [{
    A symbol naming a Cartesian rank space. Ranks are numbered row-major
    over `shape`, from 0 to the product of the axis sizes minus one. Axis
    names are unique and sizes positive.

    ```mlir
    "dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 8>} : () -> ()
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrArrayAttr:$axes,
                       DenseI64ArrayAttr:$shape);
}

def Dist_ValueOp : Dist_Op<"value"> {
  let summary = "A distributed boundary value with its sharding";
  let description = [{
    Introduces a value entering the program, with its logical (global)
    tensor type and its sharding over a mesh: `split_axes` has one list of
    mesh axes per tensor dimension; mesh axes that split nothing replicate.
    `owners`, when present, restricts the ranks that hold it. `lineage`
    names the ModelIR value it specialises.

    ```mlir
    %x = "dist.value"() {id = "x", mesh = @tp, split_axes = [[], ["tp"], []],
                         lineage = "block.in"} : () -> tensor<4x2048x6144xf16>
    ```
  }];
  let arguments = (ins StrAttr:$id, FlatSymbolRefAttr:$mesh,
                       Blueprint_SplitAxesAttr:$split_axes, StrAttr:$lineage,
                       OptionalAttr<DenseI64ArrayAttr>:$owners);
  let results = (outs AnyRankedTensor:$result);
}

def Dist_OutputOp : Dist_Op<"output"> {
  let summary = "A distributed boundary output with its sharding";
  let description = [{
    ```mlir
    "dist.output"(%y) {id = "y", mesh = @tp, split_axes = [[], [], []],
                       lineage = "block.out"} : (tensor<4x2048x6144xf16>) -> ()
    ```
  }];
  let arguments = (ins AnyRankedTensor:$value, StrAttr:$id,
                       FlatSymbolRefAttr:$mesh,
                       Blueprint_SplitAxesAttr:$split_axes, StrAttr:$lineage);
}

def Dist_MemoryKind : Blueprint_StrEnumAttr<"class of per-rank state",
    ["weight", "activation_working", "activation_storage", "activation_checkpoint",
     "weight_gradient", "weight_gradient_unsharded", "activation_gradient",
     "optimizer_state", "kv_cache"]>;

def Dist_MemoryOp : Dist_Op<"memory"> {
  let summary = "Per-rank memory one class of state needs";
  let description = [{
    Aggregate memory facts of the program: `bytes` each rank of `mesh`
    needs for one class of state (weights, activations kept for the
    backward pass, gradients, optimizer state, KV cache, ...). Planning turns
    each into a buffer of exactly that size. State sharded over a group
    (the distributed optimizer's gradients and state over DP) gives the
    group's total in `bytes` and the group size in `shared_by`: each rank
    holds `bytes / shared_by`, which need not be a whole number.

    ```mlir
    "dist.memory"() {id = "mem.weight", mesh = @tp, kind = "weight",
                     bytes = 113295360 : i64, lineage = "block"} : () -> ()
    ```
  }];
  let arguments = (ins StrAttr:$id, FlatSymbolRefAttr:$mesh, Dist_MemoryKind:$kind,
                       Blueprint_Count:$bytes, StrAttr:$lineage,
                       OptionalAttr<Blueprint_PositiveCount>:$shared_by);
}

//===----------------------------------------------------------------------===//
// Task bodies: local compute, reshard, control
//===----------------------------------------------------------------------===//

def Dist_ComputeOp : Dist_Op<"compute"> {
  let summary = "Local compute executed independently on the mesh's ranks";
  let description = [{
    One primitive invocation on every rank of the mesh (or the `ranks`
    subset), with its exact per-rank work: `ops` operations, `read_bytes`
    and `write_bytes`. `engine` is the abstract engine class, `primitive`
    names the primitive. The task's completion is its token; a task that
    produces a boundary value (such as the block output at the forward
    terminal) also returns it as `value`. Work split evenly over a group of
    `shared_by` ranks (a sharded optimizer step) states the group's totals;
    each rank does `1/shared_by` of them.

    ```mlir
    %t = "dist.compute"(%x) {id = "fw.qkv", mesh = @tp, phase = "forward",
           engine = "matrix", primitive = "matmul", ops = 120795955200 : i64,
           read_bytes = 125829120 : i64, write_bytes = 37748736 : i64,
           lineage = "attn.qkv"} : (tensor<4x2048x6144xf16>) -> !dist.token
    ```
  }];
  let arguments = !con((ins Variadic<AnyType>:$deps), Dist_TaskAttrs,
                       (ins Dist_Engine:$engine, StrAttr:$primitive,
                            Blueprint_Count:$ops, Blueprint_Count:$read_bytes,
                            Blueprint_Count:$write_bytes,
                            OptionalAttr<DenseI64ArrayAttr>:$ranks,
                            OptionalAttr<Blueprint_PositiveCount>:$shared_by));
  let results = (outs Dist_Token:$token, Optional<AnyRankedTensor>:$value);
}

def Dist_ReshardOp : Dist_Op<"reshard"> {
  let summary = "Change the sharding of a value";
  let description = [{
    Moves a value from one sharding to another over the same mesh; the
    logical tensor type does not change.

    ```mlir
    %y = "dist.reshard"(%x) {id = "rs0", mesh = @tp, phase = "forward",
           from_split_axes = [["tp"], []], to_split_axes = [[], []],
           lineage = "x"} : (tensor<2048x6144xf16>) -> tensor<2048x6144xf16>
    ```
  }];
  let arguments = !con((ins AnyRankedTensor:$input), Dist_TaskAttrs,
                       (ins Blueprint_SplitAxesAttr:$from_split_axes,
                            Blueprint_SplitAxesAttr:$to_split_axes));
  let results = (outs AnyRankedTensor:$result);
}

def Dist_ControlOp : Dist_Op<"control"> {
  let summary = "Dependency-only coordination task";
  let description = [{
    Joins its dependencies into one token; does no work and moves no data.
    Over a single tensor it turns that value into a token.

    ```mlir
    %t = "dist.control"(%a, %b) {id = "stage.fw_done", mesh = @tp,
           phase = "forward", lineage = "block"} : (!dist.token, !dist.token) -> !dist.token
    ```
  }];
  let arguments = !con((ins Variadic<AnyType>:$deps), Dist_TaskAttrs);
  let results = (outs Dist_Token:$token);
}

//===----------------------------------------------------------------------===//
// Communication: collectives and point-to-point, sync and async start forms
//===----------------------------------------------------------------------===//

// `input` is the value communicated (a tensor, or a token for facts-only
// programs); `deps` are extra ordering dependencies.
// Local work a communication does on each rank (reduction operations and
// bytes it reads and writes, default 0), and the mesh axes whose ranks the
// participants are (the group the collective claims).
defvar Dist_CommLocalWork = (ins OptionalAttr<Blueprint_Count>:$ops,
                                 OptionalAttr<Blueprint_Count>:$read_bytes,
                                 OptionalAttr<Blueprint_Count>:$write_bytes,
                                 OptionalAttr<StrArrayAttr>:$mesh_axes);

class Dist_CommOp<string mnemonic, dag extra, bit isAsync>
    : Dist_Op<!if(isAsync, mnemonic # "_start", mnemonic)> {
  let arguments = !con((ins AnyType:$input, Variadic<Dist_Token>:$deps),
                       Dist_TaskAttrs, (ins Blueprint_Count:$message_bytes), extra,
                       Dist_CommLocalWork);
  let results = !if(isAsync, (outs Dist_AsyncHandle:$handle, AnyType:$result),
                             (outs AnyType:$result));
}

multiclass Dist_Comm<string mnemonic, string summary_, string doc, dag extra> {
  def "" : Dist_CommOp<mnemonic, extra, 0> {
    let summary = summary_;
    let description = doc;
  }
  def Start : Dist_CommOp<mnemonic, extra, 1> {
    let summary = "Start (async): " # summary_;
    let description = doc # "\n    The `_start` form begins the communication and returns an async handle\n"
                          # "    with the result; the result may be used only after `dist.wait` on the\n"
                          # "    handle:\n\n    ```mlir\n    %h, %y = \"dist." # mnemonic # "_start\"(%x) {...}\n"
                          # "        : (tensor<...>) -> (!dist.async_handle, tensor<...>)\n"
                          # "    \"dist.wait\"(%h) : (!dist.async_handle) -> ()\n    ```\n";
  }
}

defvar Dist_Participants = (ins DenseI64ArrayAttr:$participants);

defm Dist_AllReduce : Dist_Comm<"all_reduce",
    "All-reduce over the participating ranks", [{
    Every participant ends with the `reduction` of all participants' inputs.
    `participants` are distinct ranks of the mesh; `message_bytes` is the
    logical size of the reduced tensor (no ring or algorithm factor).

    ```mlir
    %y = "dist.all_reduce"(%x) {id = "fw.ar0", mesh = @tp, phase = "forward",
           participants = array<i64: 0, 1, 2, 3>, reduction = "sum",
           message_bytes = 100663296 : i64, lineage = "attn.proj"}
         : (tensor<4x2048x6144xf16>) -> tensor<4x2048x6144xf16>
    ```
}], !con(Dist_Participants, (ins Blueprint_Reduction:$reduction,
                                 OptionalAttr<I64Attr>:$axis))>;

defm Dist_ReduceScatter : Dist_Comm<"reduce_scatter",
    "Reduce-scatter over the participating ranks", [{
    Reduces the participants' inputs and leaves each participant one slice
    along `axis` (default 0).

    ```mlir
    %y = "dist.reduce_scatter"(%x) {id = "fw.rs0", mesh = @tp, phase = "forward",
           participants = array<i64: 0, 1>, reduction = "sum",
           message_bytes = 100663296 : i64, lineage = "attn.proj"}
         : (tensor<4x2048x6144xf16>) -> tensor<4x1024x6144xf16>
    ```
}], !con(Dist_Participants, (ins Blueprint_Reduction:$reduction,
                                 OptionalAttr<I64Attr>:$axis))>;

defm Dist_AllGather : Dist_Comm<"all_gather",
    "All-gather over the participating ranks", [{
    Concatenates the participants' inputs along `axis` (default 0) on every
    participant. Takes no reduction.

    ```mlir
    %y = "dist.all_gather"(%x) {id = "fw.ag0", mesh = @tp, phase = "forward",
           participants = array<i64: 0, 1>, message_bytes = 100663296 : i64,
           lineage = "ln1"} : (tensor<4x1024x6144xf16>) -> tensor<4x2048x6144xf16>
    ```
}], !con(Dist_Participants, (ins OptionalAttr<I64Attr>:$axis))>;

defm Dist_AllToAll : Dist_Comm<"all_to_all",
    "All-to-all exchange over the participating ranks", [{
    Each participant sends one slice of its input along `axis` to every
    other participant. Takes no reduction.

    ```mlir
    %y = "dist.all_to_all"(%x) {id = "a2a0", mesh = @tp, phase = "forward",
           participants = array<i64: 0, 1>, message_bytes = 1024 : i64,
           lineage = "moe.dispatch"} : (tensor<8x64xf32>) -> tensor<8x64xf32>
    ```
}], !con(Dist_Participants, (ins OptionalAttr<I64Attr>:$axis))>;

defm Dist_Broadcast : Dist_Comm<"broadcast",
    "Broadcast from a root rank to the participating ranks", [{
    `root` must be one of the participants. Takes no reduction.

    ```mlir
    %y = "dist.broadcast"(%x) {id = "bc0", mesh = @tp, phase = "forward",
           participants = array<i64: 0, 1, 2, 3>, root = 0 : i64,
           message_bytes = 4096 : i64, lineage = "embed"} : (tensor<1024xf32>) -> tensor<1024xf32>
    ```
}], !con(Dist_Participants, (ins I64Attr:$root))>;

defm Dist_P2P : Dist_Comm<"p2p",
    "Point-to-point transfer from one rank to another", [{
    Moves `input` from rank `source` to rank `dest` (distinct ranks of the
    mesh); the result is defined on `dest`.

    ```mlir
    %y = "dist.p2p"(%x) {id = "pp.send0", mesh = @pp, phase = "forward",
           source = 0 : i64, dest = 1 : i64, message_bytes = 100663296 : i64,
           lineage = "block.out"} : (tensor<4x2048x6144xf16>) -> tensor<4x2048x6144xf16>
    ```
}], (ins I64Attr:$source, I64Attr:$dest)>;

def Dist_WaitOp : Dist_Op<"wait"> {
  let summary = "Wait for an asynchronous operation to complete";
  let description = [{
    After the wait, the results of the op that produced `handle` may be
    used. Each handle is waited exactly once.

    ```mlir
    "dist.wait"(%h) : (!dist.async_handle) -> ()
    ```
  }];
  let arguments = (ins Dist_AsyncHandle:$handle);
}

//===----------------------------------------------------------------------===//
// Redistribution copies (distruntime)
//===----------------------------------------------------------------------===//

def Dist_CopyReshapeOp : Dist_Op<"copy_reshape", [AttrSizedOperandSegments]> {
  let summary = "Async copy of a local shard into the local shard of a reshaped array";
  let description = [{
    `l_array` is this rank's part of a distributed array of global shape
    `g_shape` starting at `l_offsets`; the op starts copying the data needed
    for the local part (`nl_offsets`, `nl_shape`) of the reshaped array of
    global shape `ng_shape`. The input is not modified. `team` is the team
    (an integer) or mesh (a symbol) owning the array. Returns a handle and
    the new local tensor, usable after `dist.wait`.

    ```mlir
    %h, %out = "dist.copy_reshape"(%local, %g0, %g1, %o0, %o1, %ng0, %no0, %ns0)
        {team = 22 : i64, operandSegmentSizes = array<i32: 1, 2, 2, 1, 1, 1>}
        : (tensor<?x?xi64>, index, index, index, index, index, index, index)
        -> (!dist.async_handle, tensor<?xi64>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$l_array, Variadic<Index>:$g_shape,
                       Variadic<Index>:$l_offsets, Variadic<Index>:$ng_shape,
                       Variadic<Index>:$nl_offsets, Variadic<Index>:$nl_shape,
                       Dist_TeamAttr:$team);
  let results = (outs Dist_AsyncHandle:$handle, AnyRankedTensor:$n_array);
}

def Dist_CopyPermuteOp : Dist_Op<"copy_permute", [AttrSizedOperandSegments]> {
  let summary = "Async copy of a local shard into the local shard of a permuted array";
  let description = [{
    Like `dist.copy_reshape`, for the array whose dimensions are permuted by
    `axes` (a permutation of `0..rank`); the new global shape follows from
    `g_shape` and `axes`.

    ```mlir
    %h, %out = "dist.copy_permute"(%local, %g0, %g1, %o0, %o1, %no0, %no1, %ns0, %ns1)
        {team = 22 : i64, axes = array<i64: 1, 0>,
         operandSegmentSizes = array<i32: 1, 2, 2, 2, 2>}
        : (tensor<?x?xi64>, index, index, index, index, index, index, index, index)
        -> (!dist.async_handle, tensor<?x?xi64>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$l_array, Variadic<Index>:$g_shape,
                       Variadic<Index>:$l_offsets, Variadic<Index>:$nl_offsets,
                       Variadic<Index>:$nl_shape, Dist_TeamAttr:$team,
                       DenseI64ArrayAttr:$axes);
  let results = (outs Dist_AsyncHandle:$handle, AnyRankedTensor:$n_array);
}

#endif // BLUEPRINT_DIST_OPS_TD
