//===- BlueprintBase.td - Shared ODS of the Blueprint dialects -*- tablegen -*-===//
//
// Constraints, enums and op base classes shared by the `model`, `dist` and
// `plan` dialects. `build.rs` runs `mlir-tblgen` on every dialect (C++ that
// is compiled into the tools and registered through the C API) and reads
// the same records to emit IRDL and the Rust tables (op kinds, enums,
// attribute kinds) the passes and verifiers use.
//
// Closed choices are `I32EnumAttr`s: the custom form prints the case
// (`phase = forward`), the generic form the integer (`phase = 0 : i32`),
// which IRDL (and so stock `mlir-opt --irdl-file`) can check.
//
//===----------------------------------------------------------------------===//

#ifndef BLUEPRINT_BASE_TD
#define BLUEPRINT_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

// Exact work and byte counts are non-negative 64-bit integers.
def Blueprint_Count : ConfinedAttr<I64Attr, [IntNonNegative]>;
def Blueprint_PositiveCount : ConfinedAttr<I64Attr, [IntPositive]>;

// Sharding of a tensor over mesh axes: one list of mesh axis names per tensor
// dimension (the axes that split that dimension; empty means unsplit). Mesh
// axes that split no dimension replicate the value.
def Blueprint_SplitAxesAttr
    : TypedArrayAttrBase<StrArrayAttr, "per-dimension lists of mesh axis names">;

//===----------------------------------------------------------------------===//
// Enums. One C++ namespace (::blueprint) and one generated TU for all of
// them; case numbers are part of the generic form, so they never change.
//===----------------------------------------------------------------------===//

class Blueprint_Enum<string name, string summary, list<I32EnumAttrCase> cases>
    : I32EnumAttr<name, summary, cases> {
  let cppNamespace = "::blueprint";
}

def Blueprint_Datatype : Blueprint_Enum<"Datatype", "element datatype", [
    I32EnumAttrCase<"float8", 0>, I32EnumAttrCase<"float16", 1>,
    I32EnumAttrCase<"bfloat16", 2>, I32EnumAttrCase<"float32", 3>]>;

def Blueprint_Phase : Blueprint_Enum<"Phase", "execution phase", [
    I32EnumAttrCase<"forward", 0>, I32EnumAttrCase<"recompute", 1>,
    I32EnumAttrCase<"activation_gradient", 2>, I32EnumAttrCase<"weight_gradient", 3>,
    I32EnumAttrCase<"optimizer", 4>, I32EnumAttrCase<"recommunication", 5>,
    I32EnumAttrCase<"prefill", 6>, I32EnumAttrCase<"decode", 7>]>;

def Blueprint_Reduction : Blueprint_Enum<"Reduction", "reduction kind", [
    I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"max", 1>,
    I32EnumAttrCase<"min", 2>, I32EnumAttrCase<"prod", 3>]>;

def Blueprint_Role : Blueprint_Enum<"Role", "state role of a ModelIR value", [
    I32EnumAttrCase<"parameter", 0>, I32EnumAttrCase<"activation", 1>,
    I32EnumAttrCase<"activation_gradient", 2>, I32EnumAttrCase<"weight_gradient", 3>,
    I32EnumAttrCase<"optimizer_state", 4>, I32EnumAttrCase<"kv_cache", 5>,
    I32EnumAttrCase<"input", 6>]>;

def Blueprint_InferencePhase : Blueprint_Enum<"InferencePhase", "inference phase", [
    I32EnumAttrCase<"prefill", 0>, I32EnumAttrCase<"decode", 1>]>;

// Typed effects of a ModelIR op, a set of flags.
def Blueprint_Effects : I32BitEnumAttr<"Effects", "typed effects", [
    I32BitEnumAttrCaseNone<"none">,
    I32BitEnumAttrCaseBit<"parameter_update", 0>,
    I32BitEnumAttrCaseBit<"random_state", 1>,
    I32BitEnumAttrCaseBit<"mutation", 2>,
    I32BitEnumAttrCaseBit<"allocation", 3>,
    I32BitEnumAttrCaseBit<"external_call", 4>]> {
  let cppNamespace = "::blueprint";
  let separator = "|";
  let printBitEnumPrimaryGroups = 0;
}

def Blueprint_Engine : Blueprint_Enum<"Engine", "abstract engine class", [
    I32EnumAttrCase<"matrix", 0>, I32EnumAttrCase<"vector", 1>]>;

def Blueprint_Primitive : Blueprint_Enum<"Primitive", "primitive a compute task runs", [
    I32EnumAttrCase<"matmul", 0>, I32EnumAttrCase<"batch_matmul", 1>,
    I32EnumAttrCase<"layer_norm", 2>, I32EnumAttrCase<"softmax", 3>,
    I32EnumAttrCase<"gelu", 4>, I32EnumAttrCase<"swiglu", 5>,
    I32EnumAttrCase<"dropout", 6>, I32EnumAttrCase<"residual_add", 7>,
    I32EnumAttrCase<"gradient_sum", 8>, I32EnumAttrCase<"adam", 9>,
    I32EnumAttrCase<"elementwise", 10>, I32EnumAttrCase<"rms_norm", 11>,
    I32EnumAttrCase<"relu", 12>, I32EnumAttrCase<"silu", 13>,
    I32EnumAttrCase<"rope", 14>, I32EnumAttrCase<"bias_add", 15>]>;

def Blueprint_MemoryKind : Blueprint_Enum<"MemoryKind", "class of per-rank state", [
    I32EnumAttrCase<"weight", 0>, I32EnumAttrCase<"activation_working", 1>,
    I32EnumAttrCase<"activation_storage", 2>, I32EnumAttrCase<"activation_checkpoint", 3>,
    I32EnumAttrCase<"weight_gradient", 4>, I32EnumAttrCase<"weight_gradient_unsharded", 5>,
    I32EnumAttrCase<"activation_gradient", 6>, I32EnumAttrCase<"optimizer_state", 7>,
    I32EnumAttrCase<"kv_cache", 8>, I32EnumAttrCase<"boundary_value", 9>]>;

def Blueprint_ComputeCapability : Blueprint_Enum<"ComputeCapability", "compute capability", [
    I32EnumAttrCase<"matrix_multiply", 0>, I32EnumAttrCase<"vector_elementwise", 1>]>;

def Blueprint_CommunicationCapability
    : Blueprint_Enum<"CommunicationCapability", "communication capability", [
    I32EnumAttrCase<"all_reduce", 0>, I32EnumAttrCase<"reduce_scatter", 1>,
    I32EnumAttrCase<"all_gather", 2>, I32EnumAttrCase<"all_to_all", 3>,
    I32EnumAttrCase<"broadcast", 4>, I32EnumAttrCase<"point_to_point", 5>]>;

def Blueprint_TileOverlap : Blueprint_Enum<"TileOverlap", "how a tiled collective overlaps its linear", [
    I32EnumAttrCase<"ring", 0>, I32EnumAttrCase<"pipe", 1>]>;

def Blueprint_ConcurrencyGroup : Blueprint_Enum<"ConcurrencyGroup", "concurrency group", [
    I32EnumAttrCase<"compute", 0>, I32EnumAttrCase<"network", 1>]>;

def Blueprint_MemorySpace : Blueprint_Enum<"MemorySpace", "abstract memory space kind", [
    I32EnumAttrCase<"local", 0>, I32EnumAttrCase<"host", 1>, I32EnumAttrCase<"shared", 2>]>;

def Blueprint_ObjectiveKind : Blueprint_Enum<"ObjectiveKind", "objective", [
    I32EnumAttrCase<"latency", 0>, I32EnumAttrCase<"peak_memory", 1>]>;

def Blueprint_PipelineSchedule : Blueprint_Enum<"PipelineSchedule", "pipeline schedule", [
    I32EnumAttrCase<"one_f_one_b", 0>, I32EnumAttrCase<"interleaved_one_f_one_b", 1>,
    I32EnumAttrCase<"gpipe", 2>]>;

def Blueprint_Direction : Blueprint_Enum<"Direction", "direction of a schedule slot", [
    I32EnumAttrCase<"forward", 0>, I32EnumAttrCase<"backward", 1>]>;

def Blueprint_Norm : Blueprint_Enum<"Norm", "normalisation of a decoder block", [
    I32EnumAttrCase<"layer_norm", 0>, I32EnumAttrCase<"rms_norm", 1>]>;

def Blueprint_OptimizerKind : Blueprint_Enum<"OptimizerKind", "optimizer update rule", [
    I32EnumAttrCase<"sgd", 0>, I32EnumAttrCase<"adam", 1>]>;

//===----------------------------------------------------------------------===//
// Op classes the Rust side asks about (`build.rs` turns membership into the
// op-kind table: no list of op names anywhere else).
//===----------------------------------------------------------------------===//

// Effects of work that must not be erased or merged: a task does work,
// moves data or orders other tasks (MLIR's `MemRead`/`MemWrite` on the
// default resource).
defvar Blueprint_TaskEffects = MemoryEffects<[MemRead, MemWrite]>;

#endif // BLUEPRINT_BASE_TD
