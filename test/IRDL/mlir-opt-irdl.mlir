// The generated IRDL is a product: stock mlir-opt loads it and parses,
// verifies and prints Blueprint IR exactly as blueprint-opt does.
// RUN: blueprint-opt --print-irdl > %t.irdl.mlir
// RUN: %mlir_opt --irdl-file=%t.irdl.mlir %S/../Dialect/Model/ops.mlir > %t.model.stock
// RUN: blueprint-opt %S/../Dialect/Model/ops.mlir | diff %t.model.stock -
// RUN: %mlir_opt --irdl-file=%t.irdl.mlir %S/../Dialect/Dist/ops.mlir > %t.dist.stock
// RUN: blueprint-opt %S/../Dialect/Dist/ops.mlir | diff %t.dist.stock -
// RUN: %mlir_opt --irdl-file=%t.irdl.mlir %S/../Dialect/Plan/ops.mlir > %t.plan.stock
// RUN: blueprint-opt %S/../Dialect/Plan/ops.mlir | diff %t.plan.stock -
// IRDL alone enforces enum cases and operand types.
// RUN: not %mlir_opt --irdl-file=%t.irdl.mlir %s 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=IRDL < %t.irdl.mlir

// IRDL: irdl.dialect @model
// IRDL: irdl.dialect @dist
// IRDL: irdl.type @async_handle
// IRDL: irdl.operation @all_reduce_start
// IRDL: irdl.results(handle: %{{[0-9]+}}, result: %{{[0-9]+}})
// IRDL: irdl.dialect @plan

// CHECK: error: '"avg"' does not satisfy the constraint
"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @f(%x: tensor<4xf16>) -> tensor<4xf16> {
  %y = "dist.all_reduce"(%x) {id = "ar", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 0, 1>, reduction = "avg", message_bytes = 8 : i64} : (tensor<4xf16>) -> tensor<4xf16>
  return %y : tensor<4xf16>
}
