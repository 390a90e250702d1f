// The generated IRDL is a product: stock mlir-opt loads it and parses,
// verifies and prints Blueprint IR in the generic form (IRDL has no custom
// assembly formats) exactly as blueprint-opt prints it with
// --mlir-print-op-generic, and what it prints reads back into blueprint-opt
// as the same IR.
// RUN: blueprint-opt --print-irdl > %t.irdl.mlir
// RUN: FileCheck %s --check-prefix=IRDL < %t.irdl.mlir
//
// RUN: blueprint-opt %S/../Dialect/Model/ops.mlir > %t.model.custom
// RUN: blueprint-opt %S/../Dialect/Model/ops.mlir --mlir-print-op-generic > %t.model.generic
// RUN: %mlir_opt --irdl-file=%t.irdl.mlir %t.model.generic --mlir-print-op-generic | diff %t.model.generic -
// RUN: %mlir_opt --irdl-file=%t.irdl.mlir %t.model.generic | blueprint-opt | diff %t.model.custom -
//
// RUN: blueprint-opt %S/../Dialect/Dist/ops.mlir > %t.dist.custom
// RUN: blueprint-opt %S/../Dialect/Dist/ops.mlir --mlir-print-op-generic > %t.dist.generic
// RUN: %mlir_opt --irdl-file=%t.irdl.mlir %t.dist.generic --mlir-print-op-generic | diff %t.dist.generic -
// RUN: %mlir_opt --irdl-file=%t.irdl.mlir %t.dist.generic | blueprint-opt | diff %t.dist.custom -
//
// RUN: blueprint-opt %S/../Dialect/Plan/ops.mlir > %t.plan.custom
// RUN: blueprint-opt %S/../Dialect/Plan/ops.mlir --mlir-print-op-generic > %t.plan.generic
// RUN: %mlir_opt --irdl-file=%t.irdl.mlir %t.plan.generic --mlir-print-op-generic | diff %t.plan.generic -
// RUN: %mlir_opt --irdl-file=%t.irdl.mlir %t.plan.generic | blueprint-opt | diff %t.plan.custom -
//
// A generic-form program written by hand reads in both tools alike.
// RUN: %mlir_opt --irdl-file=%t.irdl.mlir %S/Inputs/generic.mlir --mlir-print-op-generic > %t.hand.stock
// RUN: blueprint-opt %S/Inputs/generic.mlir --mlir-print-op-generic | diff %t.hand.stock -
//
// IRDL alone enforces enum cases (as `i32` cases: the old string spelling
// is rejected), operand types and required attributes.
// RUN: not %mlir_opt --irdl-file=%t.irdl.mlir --split-input-file %s 2>&1 | FileCheck %s

// IRDL: irdl.dialect @model
// IRDL: irdl.operation @value
// IRDL: irdl.attributes {"id" = %{{[0-9]+}}, "role" = %{{[0-9]+}}}
// IRDL: irdl.dialect @dist
// IRDL: irdl.type @async_handle
// IRDL: irdl.operation @all_reduce_start
// IRDL: irdl.results(handle: %{{[0-9]+}}, result: %{{[0-9]+}})
// IRDL: irdl.operation @num_ranks
// IRDL: irdl.operation @rank
// IRDL: irdl.dialect @plan

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @reduction_case(%x: tensor<4xf16>) -> tensor<4xf16> {
  // CHECK: mlir-opt-irdl.mlir:[[@LINE+1]]:8: error: '7 : i32' does not satisfy the constraint
  %y = "dist.all_reduce"(%x) {id = "ar", mesh = @tp, phase = 0 : i32, lineage = "l", participants = array<i64: 0, 1>, reduction = 7 : i32, message_bytes = 8 : i64} : (tensor<4xf16>) -> tensor<4xf16>
  return %y : tensor<4xf16>
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @reduction_as_string(%x: tensor<4xf16>) -> tensor<4xf16> {
  // CHECK: mlir-opt-irdl.mlir:[[@LINE+1]]:8: error: '"sum"' does not satisfy the constraint
  %y = "dist.all_reduce"(%x) {id = "ar", mesh = @tp, phase = 0 : i32, lineage = "l", participants = array<i64: 0, 1>, reduction = "sum", message_bytes = 8 : i64} : (tensor<4xf16>) -> tensor<4xf16>
  return %y : tensor<4xf16>
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @deps_are_tokens(%x: tensor<4xf16>) -> tensor<4xf16> {
  // CHECK: mlir-opt-irdl.mlir:[[@LINE+1]]:8: error: expected base type 'dist.token' but got 'builtin.tensor'
  %y = "dist.all_reduce"(%x, %x) {id = "ar", mesh = @tp, phase = 0 : i32, lineage = "l", participants = array<i64: 0, 1>, reduction = 0 : i32, message_bytes = 8 : i64} : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  return %y : tensor<4xf16>
}

// -----

"model.header"() {schema_name = "blueprint.model", schema_version = "1.0"} : () -> ()
func.func @missing_role() {
  // CHECK: mlir-opt-irdl.mlir:[[@LINE+1]]:8: error: 'model.value' op attribute "role" is expected but not provided
  %x = "model.value"() {id = "x"} : () -> tensor<4xf16>
  return
}
