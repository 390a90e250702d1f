//===- BlueprintBase.td - Shared ODS classes for Blueprint -*- tablegen -*-===//
//
// Constraint classes shared by the `model`, `dist` and `plan` dialects.
// `build.rs` turns every op defined with them into IRDL; the classes below
// are the only non-upstream constraints it has to understand.
//
//===----------------------------------------------------------------------===//

#ifndef BLUEPRINT_BASE_TD
#define BLUEPRINT_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

// A string attribute restricted to a closed set of cases. IRDL checks the
// case with `irdl.any_of(irdl.is "a", irdl.is "b", ...)`.
class Blueprint_StrEnumAttr<string desc, list<string> cases_>
    : StringBasedAttr<CPred<"::llvm::isa<::mlir::StringAttr>($_self)">,
                      desc # " (one of: " # !interleave(cases_, ", ") # ")"> {
  list<string> enumCases = cases_;
}

// An array of strings each drawn from a closed set of cases.
class Blueprint_StrEnumArrayAttr<string desc, list<string> cases_>
    : TypedArrayAttrBase<StrAttr,
                         desc # " (each one of: " # !interleave(cases_, ", ") # ")"> {
  list<string> enumCases = cases_;
}

// Exact work and byte counts are non-negative 64-bit integers.
def Blueprint_Count : ConfinedAttr<I64Attr, [IntNonNegative]>;
def Blueprint_PositiveCount : ConfinedAttr<I64Attr, [IntPositive]>;

// Sharding of a tensor over mesh axes: one list of mesh axis names per tensor
// dimension (the axes that split that dimension; empty means unsplit). Mesh
// axes that split no dimension replicate the value.
def Blueprint_SplitAxesAttr
    : TypedArrayAttrBase<StrArrayAttr, "per-dimension lists of mesh axis names">;

def Blueprint_Datatype : Blueprint_StrEnumAttr<"element datatype",
    ["float8", "float16", "bfloat16", "float32"]>;

def Blueprint_Phase : Blueprint_StrEnumAttr<"execution phase",
    ["forward", "recompute", "activation_gradient", "weight_gradient",
     "optimizer", "recommunication", "prefill", "decode"]>;

def Blueprint_Reduction : Blueprint_StrEnumAttr<"reduction kind",
    ["sum", "max", "min", "prod"]>;

#endif // BLUEPRINT_BASE_TD
