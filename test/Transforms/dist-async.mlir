// RUN: blueprint-opt %s --dist-async --split-input-file | FileCheck %s
// Running it twice changes nothing the second time.
// RUN: blueprint-opt %s --dist-async --split-input-file > %t.once && blueprint-opt %t.once --dist-async --split-input-file | diff %t.once -

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()

// CHECK-LABEL: func.func @tp_linear
func.func @tp_linear(%x: tensor<8x16xf32>, %t: !dist.token) -> tensor<8x16xf32> {
  // CHECK: %[[AR:.*]]:2 = "dist.all_reduce_start"(%arg0, %arg1) {id = "ar", lineage = "l", mesh = @tp, message_bytes = 512 : i64, participants = array<i64: 0, 1, 2, 3>, phase = "forward", reduction = "sum"} : (tensor<8x16xf32>, !dist.token) -> (!dist.async_handle, tensor<8x16xf32>)
  // CHECK-NEXT: "dist.wait"(%[[AR]]#0) : (!dist.async_handle) -> ()
  // CHECK-NEXT: %[[SUM:.*]] = arith.addf %[[AR]]#1, %[[AR]]#1
  %y = "dist.all_reduce"(%x, %t) {id = "ar", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 0, 1, 2, 3>, reduction = "sum", message_bytes = 512 : i64} : (tensor<8x16xf32>, !dist.token) -> tensor<8x16xf32>
  %z = arith.addf %y, %y : tensor<8x16xf32>
  // CHECK: return %[[SUM]]
  return %z : tensor<8x16xf32>
}

// CHECK-LABEL: func.func @every_kind
func.func @every_kind(%x: tensor<8x16xf32>) {
  // CHECK: "dist.reduce_scatter_start"
  // CHECK-NEXT: "dist.wait"
  %a = "dist.reduce_scatter"(%x) {id = "rs", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 0, 1, 2, 3>, reduction = "sum", message_bytes = 512 : i64} : (tensor<8x16xf32>) -> tensor<2x16xf32>
  // CHECK: "dist.all_gather_start"
  // CHECK-NEXT: "dist.wait"
  %b = "dist.all_gather"(%a) {id = "ag", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 0, 1, 2, 3>, message_bytes = 512 : i64} : (tensor<2x16xf32>) -> tensor<8x16xf32>
  // CHECK: "dist.all_to_all_start"
  %c = "dist.all_to_all"(%b) {id = "a2a", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 0, 1, 2, 3>, message_bytes = 512 : i64} : (tensor<8x16xf32>) -> tensor<8x16xf32>
  // CHECK: "dist.broadcast_start"
  %d = "dist.broadcast"(%c) {id = "bc", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 0, 1>, root = 1 : i64, message_bytes = 512 : i64} : (tensor<8x16xf32>) -> tensor<8x16xf32>
  // CHECK: "dist.p2p_start"
  // CHECK-NOT: "dist.p2p"(
  %e = "dist.p2p"(%d) {id = "p", mesh = @tp, phase = "forward", lineage = "l", source = 0 : i64, dest = 1 : i64, message_bytes = 512 : i64} : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

// A program with nothing to make async is left as it is.
"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
// CHECK-LABEL: func.func @nothing
// CHECK-NEXT: "dist.compute"
// CHECK-NEXT: return
func.func @nothing(%t: !dist.token) {
  %t1 = "dist.compute"(%t) {id = "c", mesh = @tp, phase = "forward", lineage = "l", engine = "vector", primitive = "gelu", ops = 1 : i64, read_bytes = 2 : i64, write_bytes = 2 : i64} : (!dist.token) -> !dist.token
  return
}
