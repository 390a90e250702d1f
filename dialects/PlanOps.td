//===- PlanOps.td - PortablePlanIR: exact work, abstract resources -*- tablegen -*-===//
//
// The `plan` dialect holds exact work facts copied from the distributed
// program, abstract resource demand, capability requirements, concurrency
// groups, buffers and objectives. It is still target-neutral: kernels,
// physical devices, memory banks, queues and durations are forbidden.
//
//===----------------------------------------------------------------------===//

#ifndef BLUEPRINT_PLAN_OPS_TD
#define BLUEPRINT_PLAN_OPS_TD

include "BlueprintBase.td"

def Plan_Dialect : Dialect {
  let name = "plan";
  // Inherent attributes stay attributes (not properties), so the generic
  // form is `{...}`, which the IRDL form of the dialect (stock
  // `mlir-opt --irdl-file`) reads.
  let usePropertiesForAttributes = 0;
  let cppNamespace = "::blueprint::plan";
  let summary = "PortablePlanIR: exact work facts and abstract resources";
  let useDefaultTypePrinterParser = 1;
  let description = [{
    A plan is a DAG of `plan.compute_task` and `plan.collective_task` ops
    ordered by `!plan.token` operands, plus `plan.buffer` and
    `plan.objective` declarations and one `plan.header` carrying the digest
    of the source distributed program. Work facts (operations, bytes read
    and written, message bytes) are copied exactly from the source tasks;
    resource demand is abstract (per logical rank: compute operations,
    memory traffic bytes, network bytes). A system profile is consumed only
    by an estimate made after the plan and never changes it.
  }];
}

def Plan_Token : TypeDef<Plan_Dialect, "Token"> {
  let mnemonic = "token";
  let summary = "Completion of a plan task";
  let description = "Orders plan tasks; carries no data.";
}

class Plan_Op<string mnemonic, list<Trait> traits = []>
    : Op<Plan_Dialect, mnemonic, traits>;

// Plan tasks state work: never erased or merged.
class Plan_TaskOp<string mnemonic> : Plan_Op<mnemonic, [Blueprint_TaskEffects]>;

// Work facts and abstract per-rank resource demand shared by every task.
defvar Plan_TaskAttrs = (ins StrAttr:$id, StrAttr:$lineage, Blueprint_Phase:$phase,
                             Blueprint_Count:$ops, Blueprint_Count:$read_bytes,
                             Blueprint_Count:$write_bytes,
                             Blueprint_Count:$compute_demand,
                             Blueprint_Count:$memory_demand,
                             Blueprint_Count:$network_demand,
                             Blueprint_PositiveCount:$ranks,
                             Blueprint_ConcurrencyGroup:$group,
                             OptionalAttr<Blueprint_Count>:$block,
                             OptionalAttr<Blueprint_Count>:$stage,
                             OptionalAttr<Blueprint_Count>:$chunk,
                             OptionalAttr<Blueprint_Count>:$microbatch);
defvar Plan_TaskFormat = !strconcat("`phase` `=` $phase `ops` `=` $ops `read` `=` $read_bytes `write` `=` $write_bytes", " `demand` `(` $compute_demand `,` $memory_demand `,` $network_demand `)`", " `ranks` `=` $ranks `group` `=` $group");

def Plan_HeaderOp : Plan_Op<"header"> {
  let summary = "Schema and source digest of the portable plan";
  let description = [{
    Exactly one per module that holds `plan` ops; `source` is the digest of
    the distributed program the plan was derived from.

    ```mlir
    plan.header schema "blueprint.plan" version "1.0" source "sha256:..."
    ```
  }];
  let arguments = (ins StrAttr:$schema_name, StrAttr:$schema_version,
                       StrAttr:$source_digest);
  let assemblyFormat = "`schema` $schema_name `version` $schema_version `source` $source_digest attr-dict";
}

def Plan_ComputeTaskOp : Plan_TaskOp<"compute_task"> {
  let summary = "A compute task with exact work and a capability requirement";
  let description = [{
    `lineage` is the id of the `dist` task it was derived from; `ops`,
    `read` and `write` bytes are copied exactly from it. `demand(compute,
    memory, network)` is the abstract resource demand, `ranks` how many
    logical ranks run the task. `shared_by`, when present, is copied from a
    task whose work a group of ranks splits evenly: facts and demand are the
    group's totals.

    ```mlir
    %t = plan.compute_task "fw.qkv" matrix_multiply phase = forward ops = 120795955200
           read = 125829120 write = 37748736 demand(120795955200, 163577856, 0)
           ranks = 8 group = compute {lineage = "fw.qkv"}
    ```
  }];
  let arguments = !con((ins Variadic<Plan_Token>:$deps), Plan_TaskAttrs,
                       (ins Blueprint_ComputeCapability:$capability,
                            OptionalAttr<Blueprint_PositiveCount>:$shared_by));
  let results = (outs Plan_Token:$token);
  let assemblyFormat = !strconcat("$id (`after` `(` $deps^ `)`)? $capability ", Plan_TaskFormat, " (`shared_by` `=` $shared_by^)? attr-dict");
}

def Plan_CollectiveTaskOp : Plan_TaskOp<"collective_task"> {
  let summary = "A communication task with exact message bytes";
  let description = [{
    `bytes` (the message bytes) is copied exactly from the source
    collective or point-to-point task; the capability names the
    communication it needs; `mesh_axes` names the logical mesh axes it spans
    (which abstract network scope it needs: tensor-, pipeline- or
    data-parallel). `tiled_with`, `tiles` and `overlap` are copied from a
    tiled dist collective: the id of the compute task it overlaps, in
    `tiles` pieces on a `ring` or `pipe` schedule.

    ```mlir
    %t = plan.collective_task "fw.ar0" after(%a) all_reduce bytes = 100663296 phase = forward
           ops = 0 read = 0 write = 0 demand(0, 0, 100663296) ranks = 8 group = network
           {lineage = "fw.ar0", mesh_axes = ["tp"]}
    %u = plan.collective_task "attn.tp_exit.fwd" after(%t) all_reduce bytes = 100663296 phase = forward
           ops = 44040192 read = 0 write = 0 demand(44040192, 0, 100663296) ranks = 8 group = network
           tiled_with "attn.proj.fwd" tiles = 8 overlap = ring {lineage = "attn.dropout", mesh_axes = ["tp"]}
    ```
  }];
  let arguments = !con((ins Variadic<Plan_Token>:$deps), Plan_TaskAttrs,
                       (ins Blueprint_CommunicationCapability:$capability,
                            Blueprint_Count:$message_bytes,
                            OptionalAttr<StrArrayAttr>:$mesh_axes,
                            OptionalAttr<StrAttr>:$tiled_with,
                            OptionalAttr<Blueprint_PositiveCount>:$tiles,
                            OptionalAttr<Blueprint_TileOverlap>:$overlap));
  let results = (outs Plan_Token:$token);
  let assemblyFormat = !strconcat("$id (`after` `(` $deps^ `)`)? $capability `bytes` `=` $message_bytes ", Plan_TaskFormat, " (`tiled_with` $tiled_with^)? (`tiles` `=` $tiles^)? (`overlap` `=` $overlap^)? attr-dict");
}

def Plan_BufferOp : Plan_Op<"buffer", [Symbol]> {
  let summary = "An abstract buffer: size, alignment and memory-space kind";
  let description = [{
    A symbol for a buffer the plan needs per rank. `align` is a power of
    two; the memory space is an abstract kind, never a physical bank; the
    contents say what it holds. `lineage` names the distributed value or
    memory fact it comes from. A buffer sharded over a group states the
    group's total `size` and the group size `shared_by`. A buffer of one
    pipeline stage names it (`stage = s`), a buffer of one block the block
    (`block 0`).

    ```mlir
    plan.buffer @kv_cache kv_cache size = 8388608 align = 64 in local {lineage = "kv"}
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Blueprint_Count:$size,
                       ConfinedAttr<I64Attr, [IntPositivePowerOf2]>:$alignment,
                       Blueprint_MemorySpace:$memory_space, Blueprint_MemoryKind:$contents,
                       StrAttr:$lineage, OptionalAttr<Blueprint_PositiveCount>:$shared_by,
                       OptionalAttr<Blueprint_Count>:$stage, OptionalAttr<Blueprint_Count>:$block);
  let assemblyFormat = !strconcat("$sym_name $contents `size` `=` $size `align` `=` $alignment `in` $memory_space",
      " (`shared_by` `=` $shared_by^)? (`stage` `=` $stage^)? (`block` $block^)? attr-dict");
}

def Plan_PipelineOp : Plan_Op<"pipeline", [Symbol]> {
  let summary = "The pipeline of the planned step (copied from `dist.pipeline`)";
  let description = [{
    Unrolled when the dist program was: the plan tasks are then instances
    in `func.func @step_plan`.

    ```mlir
    plan.pipeline @step schedule = one_f_one_b stages = 8 chunks = 1 microbatches = 64 blocks = 96
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Blueprint_PipelineSchedule:$schedule,
                       Blueprint_PositiveCount:$stages, Blueprint_PositiveCount:$chunks,
                       Blueprint_PositiveCount:$microbatches, Blueprint_PositiveCount:$blocks,
                       UnitAttr:$unrolled);
  let assemblyFormat = !strconcat("$sym_name `schedule` `=` $schedule `stages` `=` $stages",
      " `chunks` `=` $chunks `microbatches` `=` $microbatches `blocks` `=` $blocks",
      " (`unrolled` $unrolled^)? attr-dict");
}

def Plan_ChunkOp : Plan_Op<"chunk", [Symbol]> {
  let summary = "The plan of one model chunk (copied from `dist.chunk`)";
  let description = [{
    The plan tasks of the chunk's block template (one block, one
    microbatch, and its once-per-step tasks) and of its boundary
    transfers; regions as in `dist.chunk`. Buffers are module-level
    symbols naming their stage or block.

    ```mlir
    plan.chunk @s0.c0 of @step stage = 0 chunk = 0 first_block = 0 blocks = 4 {
    ^bb0(%in: !plan.token):
      %t = plan.compute_task "s0.c0.attn.ln.fwd" after(%in) vector_elementwise phase = forward
             ops = 1 read = 2 write = 1 demand(1, 3, 0) ranks = 4 group = compute {lineage = "attn.ln.fwd"}
      plan.yield %t : !plan.token
    } boundary {
    ^bb0(%in: !plan.token):
      plan.yield
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

def Plan_YieldOp : Plan_Op<"yield", [Pure, Terminator, ReturnLike, HasParent<"ChunkOp">]> {
  let summary = "End of a plan chunk region";
  let description = [{
    ```mlir
    plan.yield %t : !plan.token
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

def Plan_ScheduleOp : Plan_Op<"schedule"> {
  let summary = "The ordered slots of one stage (copied from `dist.schedule`)";
  let description = [{
    ```mlir
    plan.schedule @step stage = 0 slots = [0, 0, 0, 0, 0, 1]
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$pipeline, Blueprint_Count:$stage,
                       DenseI64ArrayAttr:$slots);
  let assemblyFormat = "$pipeline `stage` `=` $stage `slots` `=` $slots attr-dict";
}

def Plan_ObjectiveOp : Plan_Op<"objective"> {
  let summary = "An objective the plan is evaluated against";
  let description = [{
    ```mlir
    plan.objective peak_memory
    ```
  }];
  let arguments = (ins Blueprint_ObjectiveKind:$kind);
  let assemblyFormat = "$kind attr-dict";
}

#endif // BLUEPRINT_PLAN_OPS_TD
