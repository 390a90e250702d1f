// The append that starts a KV cache has no `cache` operand; it prints in the
// custom form, and that form must parse back to the same op (two operands,
// keys and values), as in ops.mlir. The append to a cache names it after the
// keyword `cache`, so the two forms cannot be confused: an optional group
// anchored on the cache operand itself would read a fresh append's keys as
// its cache and then fail ("expected ','").
// RUN: blueprint-opt %s > %t.1.mlir && blueprint-opt %t.1.mlir > %t.2.mlir && diff %t.1.mlir %t.2.mlir
// RUN: FileCheck %s < %t.2.mlir
// RUN: blueprint-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC
// The generic form parses back to the same custom form.
// RUN: blueprint-opt %s --mlir-print-op-generic | blueprint-opt | diff %t.1.mlir -

model.header schema "blueprint.model" version "1.0"
// CHECK-LABEL: func.func @fresh_cache
func.func @fresh_cache() {
  // CHECK: %[[K:.*]] = model.value "keys" activation : tensor<1x4x8xf16>
  %keys = model.value "keys" activation : tensor<1x4x8xf16>
  // CHECK: %[[V:.*]] = model.value "vals" activation : tensor<1x4x8xf16>
  %vals = model.value "vals" activation : tensor<1x4x8xf16>
  // CHECK: %[[KV:.*]] = model.kv_append "kv.first"(%[[K]], %[[V]]) effects(mutation) : (tensor<1x4x8xf16>, tensor<1x4x8xf16>) -> tensor<2x1x?x8xf16>
  // GENERIC: "model.kv_append"(%{{[^,]*}}, %{{[^,]*}}) {effects = 4 : i32, id = "kv.first"} : (tensor<1x4x8xf16>, tensor<1x4x8xf16>) -> tensor<2x1x?x8xf16>
  %kv = "model.kv_append"(%keys, %vals) {id = "kv.first", effects = 4 : i32} : (tensor<1x4x8xf16>, tensor<1x4x8xf16>) -> tensor<2x1x?x8xf16>
  // The same op in the custom form.
  // CHECK: %[[KV2:.*]] = model.kv_append "kv.first.custom"(%[[K]], %[[V]]) effects(mutation) : (tensor<1x4x8xf16>, tensor<1x4x8xf16>) -> tensor<2x1x?x8xf16>
  // GENERIC: "model.kv_append"(%{{[^,]*}}, %{{[^,]*}}) {effects = 4 : i32, id = "kv.first.custom"}
  %kv2 = model.kv_append "kv.first.custom"(%keys, %vals) effects(mutation) : (tensor<1x4x8xf16>, tensor<1x4x8xf16>) -> tensor<2x1x?x8xf16>
  // An append to the cache the first one started.
  // CHECK: %[[KV3:.*]] = model.kv_append "kv.next"(%[[K]], %[[V]]) cache(%[[KV]] : tensor<2x1x?x8xf16>) effects(mutation) : (tensor<1x4x8xf16>, tensor<1x4x8xf16>) -> tensor<2x1x?x8xf16>
  // GENERIC: "model.kv_append"(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}) {effects = 4 : i32, id = "kv.next"} : (tensor<2x1x?x8xf16>, tensor<1x4x8xf16>, tensor<1x4x8xf16>) -> tensor<2x1x?x8xf16>
  %kv3 = model.kv_append "kv.next"(%keys, %vals) cache(%kv : tensor<2x1x?x8xf16>) effects(mutation) : (tensor<1x4x8xf16>, tensor<1x4x8xf16>) -> tensor<2x1x?x8xf16>
  // CHECK: model.output %[[KV2]] "kv.out.custom" as kv_cache : tensor<2x1x?x8xf16>
  model.output %kv2 "kv.out.custom" as kv_cache : tensor<2x1x?x8xf16>
  // CHECK: model.output %[[KV3]] "kv.out" as kv_cache : tensor<2x1x?x8xf16>
  model.output %kv3 "kv.out" as kv_cache : tensor<2x1x?x8xf16>
  return
}
