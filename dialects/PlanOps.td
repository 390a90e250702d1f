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
  let cppNamespace = "::blueprint::plan";
  let summary = "PortablePlanIR: exact work facts and abstract resources";
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

def Plan_ComputeCapability : Blueprint_StrEnumAttr<"compute capability",
    ["matrix_multiply", "vector_elementwise"]>;

def Plan_CollectiveCapability : Blueprint_StrEnumAttr<"communication capability",
    ["all_reduce", "reduce_scatter", "all_gather", "all_to_all", "broadcast",
     "point_to_point"]>;

def Plan_ConcurrencyGroup : Blueprint_StrEnumAttr<"concurrency group",
    ["compute", "network"]>;

def Plan_MemorySpace : Blueprint_StrEnumAttr<"abstract memory space kind",
    ["local", "host", "shared"]>;

def Plan_BufferContents : Blueprint_StrEnumAttr<"what a buffer holds",
    ["weight", "activation_working", "activation_storage", "activation_checkpoint",
     "weight_gradient", "weight_gradient_unsharded", "activation_gradient",
     "optimizer_state", "kv_cache", "boundary_value"]>;

def Plan_ObjectiveKind : Blueprint_StrEnumAttr<"objective",
    ["latency", "peak_memory"]>;

class Plan_Op<string mnemonic, list<Trait> traits = []>
    : Op<Plan_Dialect, mnemonic, traits>;

// Work facts and abstract per-rank resource demand shared by every task.
defvar Plan_TaskAttrs = (ins StrAttr:$id, StrAttr:$lineage, Blueprint_Phase:$phase,
                             Blueprint_Count:$ops, Blueprint_Count:$read_bytes,
                             Blueprint_Count:$write_bytes,
                             Blueprint_Count:$compute_demand,
                             Blueprint_Count:$memory_demand,
                             Blueprint_Count:$network_demand,
                             Blueprint_PositiveCount:$ranks,
                             Plan_ConcurrencyGroup:$group);

def Plan_HeaderOp : Plan_Op<"header"> {
  let summary = "Schema and source digest of the portable plan";
  let description = [{
    Exactly one per module that holds `plan` ops; `source_digest` is the
    digest of the distributed program the plan was derived from.

    ```mlir
    "plan.header"() {schema_name = "blueprint.plan", schema_version = "1.0",
                     source_digest = "sha256:..."} : () -> ()
    ```
  }];
  let arguments = (ins StrAttr:$schema_name, StrAttr:$schema_version,
                       StrAttr:$source_digest);
}

def Plan_ComputeTaskOp : Plan_Op<"compute_task"> {
  let summary = "A compute task with exact work and a capability requirement";
  let description = [{
    `lineage` is the id of the `dist` task it was derived from; `ops`,
    `read_bytes` and `write_bytes` are copied exactly from it. `*_demand`
    is the abstract resource demand, `ranks` how many logical ranks run the
    task. `shared_by`, when present, is copied from a task whose work a
    group of ranks splits evenly: facts and demand are the group's totals.

    ```mlir
    %t = "plan.compute_task"() {id = "fw.qkv", lineage = "fw.qkv", phase = "forward",
           capability = "matrix_multiply", ops = 120795955200 : i64,
           read_bytes = 125829120 : i64, write_bytes = 37748736 : i64,
           compute_demand = 120795955200 : i64, memory_demand = 163577856 : i64,
           network_demand = 0 : i64, ranks = 8 : i64, group = "compute"} : () -> !plan.token
    ```
  }];
  let arguments = !con((ins Variadic<Plan_Token>:$deps), Plan_TaskAttrs,
                       (ins Plan_ComputeCapability:$capability,
                            OptionalAttr<Blueprint_PositiveCount>:$shared_by));
  let results = (outs Plan_Token:$token);
}

def Plan_CollectiveTaskOp : Plan_Op<"collective_task"> {
  let summary = "A communication task with exact message bytes";
  let description = [{
    `message_bytes` is copied exactly from the source collective or
    point-to-point task; `capability` names the communication it needs;
    `mesh_axes` names the logical mesh axes it spans (which abstract network
    scope it needs: tensor-, pipeline- or data-parallel).

    ```mlir
    %t = "plan.collective_task"(%a) {id = "fw.ar0", lineage = "fw.ar0", phase = "forward",
           capability = "all_reduce", message_bytes = 100663296 : i64, ops = 0 : i64,
           read_bytes = 0 : i64, write_bytes = 0 : i64, compute_demand = 0 : i64,
           memory_demand = 0 : i64, network_demand = 100663296 : i64, ranks = 8 : i64,
           group = "network"} : (!plan.token) -> !plan.token
    ```
  }];
  let arguments = !con((ins Variadic<Plan_Token>:$deps), Plan_TaskAttrs,
                       (ins Plan_CollectiveCapability:$capability,
                            Blueprint_Count:$message_bytes,
                            OptionalAttr<StrArrayAttr>:$mesh_axes));
  let results = (outs Plan_Token:$token);
}

def Plan_BufferOp : Plan_Op<"buffer"> {
  let summary = "An abstract buffer: size, alignment and memory-space kind";
  let description = [{
    A symbol for a buffer the plan needs per rank. `alignment` is a power
    of two; `memory_space` is an abstract kind, never a physical bank;
    `contents` says what it holds. `lineage` names the distributed value or
    memory fact it comes from. A buffer sharded over a group states the
    group's total `size` and the group size `shared_by`.

    ```mlir
    "plan.buffer"() {sym_name = "kv_cache", size = 8388608 : i64, alignment = 64 : i64,
                     memory_space = "local", contents = "kv_cache", lineage = "kv"} : () -> ()
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Blueprint_Count:$size,
                       ConfinedAttr<I64Attr, [IntPositivePowerOf2]>:$alignment,
                       Plan_MemorySpace:$memory_space, Plan_BufferContents:$contents,
                       StrAttr:$lineage, OptionalAttr<Blueprint_PositiveCount>:$shared_by);
}

def Plan_ObjectiveOp : Plan_Op<"objective"> {
  let summary = "An objective the plan is evaluated against";
  let description = [{
    ```mlir
    "plan.objective"() {kind = "peak_memory"} : () -> ()
    ```
  }];
  let arguments = (ins Plan_ObjectiveKind:$kind);
}

#endif // BLUEPRINT_PLAN_OPS_TD
