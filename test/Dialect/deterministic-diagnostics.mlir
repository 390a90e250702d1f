// One op per chunk with two (or more) attributes that break their
// constraints at once. The diagnostics must be the same on every run: the
// C++ verifiers generated from the ODS check attributes in the order the ODS
// declares them and stop at the first failure; the Rust verifiers report
// every failure, in the ODS order and then in the order of the op's
// attribute dictionary (sorted by name). (Stock `mlir-opt --irdl-file` with
// the IRDL product is not deterministic here: upstream's IRDL op verifier
// walks its attribute constraints in hash order.)
// RUN: not blueprint-opt %s --split-input-file > /dev/null 2> %t.first
// RUN: for i in $(seq 100); do not blueprint-opt %s --split-input-file 2>&1 > /dev/null | cmp -s %t.first - || exit 1; done
// RUN: FileCheck %s < %t.first

// CHECK: error: 'model.softmax' op attribute 'id' failed to satisfy constraint: string attribute
// CHECK-NOT: error: 'model.softmax'
"model.header"() {schema_name = "blueprint.model", schema_version = "1.0"} : () -> ()
func.func @f() {
  %x = "model.value"() {id = "x", role = 6 : i32} : () -> tensor<1x4x4xf16>
  %y = "model.softmax"(%x) {id = 5 : i64, dim = "bad"} : (tensor<1x4x4xf16>) -> tensor<1x4x4xf16>
  return
}

// -----

// CHECK: error: 'dist.compute' op attribute 'read_bytes' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative
// CHECK-NOT: error: 'dist.compute'
"dist.header"() {model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111", schema_name = "blueprint.dist", schema_version = "1.0"} : () -> ()
"dist.mesh"() {axes = ["tp"], shape = array<i64: 4>, sym_name = "tp"} : () -> ()
func.func @g() {
  %x = "dist.value"() {id = "x", lineage = "x", mesh = @tp, split_axes = [[], [], []]} : () -> tensor<2x8x16xf16>
  %t = "dist.compute"(%x) {engine = 0 : i32, id = "c", lineage = "c", mesh = @tp, ops = 1 : i64, phase = 0 : i32, primitive = 0 : i32, read_bytes = -1 : i64, write_bytes = -2 : i64} : (tensor<2x8x16xf16>) -> !dist.token
  return
}

// -----

// CHECK: error: 'plan.buffer' op attribute 'size' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative
// CHECK-NOT: error: 'plan.buffer'
"plan.header"() {schema_name = "blueprint.plan", schema_version = "1.0", source_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"plan.buffer"() {alignment = 3 : i64, contents = 8 : i32, lineage = "kv", memory_space = 9 : i32, size = -1 : i64, sym_name = "kv"} : () -> ()

// -----

// The Rust verifiers report every failure of one op, always in this order.
// CHECK: error: 'model.value' op has unknown attribute 'aaa' (not declared by 'model.value')
// CHECK-NEXT: error: 'model.value' op has unknown attribute 'zzz' (not declared by 'model.value')
// CHECK-NEXT: error: 'model.value' op attribute 'mesh' is a placement or target field, illegal in the 'model' layer
// CHECK-NEXT: error: 'model.value' op attribute 'tp' is a placement or target field, illegal in the 'model' layer
// CHECK-NOT: error
model.header schema "blueprint.model" version "1.0"
func.func @h() {
  %x = model.value "x" input {zzz = 1 : i64, tp = 2 : i64, mesh = 1 : i64, aaa = 2 : i64} : tensor<4xf16>
  return
}
