// RUN: blueprint-opt %s | FileCheck %s
// RUN: blueprint-opt %s > %t.1.mlir && blueprint-opt %t.1.mlir > %t.2.mlir && diff %t.1.mlir %t.2.mlir
// RUN: blueprint-opt %s --mlir-print-op-generic | blueprint-opt | diff %t.1.mlir -

// CHECK: "dist.header"() {model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111", schema_name = "blueprint.dist", schema_version = "1.0"}
"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
// CHECK: "dist.mesh"() {axes = ["tp"], shape = array<i64: 4>, sym_name = "tp"}
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
// CHECK: "dist.mesh"() {axes = ["dp", "tp"], shape = array<i64: 2, 4>, sym_name = "grid"}
"dist.mesh"() {sym_name = "grid", axes = ["dp", "tp"], shape = array<i64: 2, 4>} : () -> ()

// CHECK: "dist.memory"() {bytes = 4096 : i64, id = "mem.kv", kind = "kv_cache", lineage = "kv", mesh = @tp}
"dist.memory"() {id = "mem.kv", mesh = @tp, kind = "kv_cache", bytes = 4096 : i64, lineage = "kv"} : () -> ()

// CHECK-LABEL: func.func @tasks
func.func @tasks() {
  // CHECK: %[[X:.*]] = "dist.value"() {id = "x", lineage = "block.in", mesh = @tp, split_axes = {{\[\[}}], ["tp"], []]} : () -> tensor<2x8x16xf16>
  %x = "dist.value"() {id = "x", mesh = @tp, split_axes = [[], ["tp"], []], lineage = "block.in"} : () -> tensor<2x8x16xf16>
  // CHECK: "dist.value"() {id = "w", lineage = "w", mesh = @grid, owners = array<i64: 0, 1, 2, 3>, split_axes = {{\[\[}}], ["tp"]]}
  %w = "dist.value"() {id = "w", mesh = @grid, split_axes = [[], ["tp"]], owners = array<i64: 0, 1, 2, 3>, lineage = "w"} : () -> tensor<16x16xf16>
  // CHECK: %[[T0:.*]] = "dist.compute"(%[[X]]) {engine = "matrix", id = "fw.fc1", lineage = "fc1", mesh = @tp, ops = 1024 : i64, phase = "forward", primitive = "matmul", read_bytes = 256 : i64, write_bytes = 128 : i64} : (tensor<2x8x16xf16>) -> !dist.token
  %t0 = "dist.compute"(%x) {id = "fw.fc1", mesh = @tp, phase = "forward", engine = "matrix", primitive = "matmul", ops = 1024 : i64, read_bytes = 256 : i64, write_bytes = 128 : i64, lineage = "fc1"} : (tensor<2x8x16xf16>) -> !dist.token
  // CHECK: "dist.compute"(%[[T0]]) {engine = "vector", {{.*}}ranks = array<i64: 0, 2>
  %t1 = "dist.compute"(%t0) {id = "fw.gelu", mesh = @tp, phase = "forward", engine = "vector", primitive = "gelu", ops = 64 : i64, read_bytes = 128 : i64, write_bytes = 128 : i64, lineage = "gelu", ranks = array<i64: 0, 2>} : (!dist.token) -> !dist.token
  // CHECK: "dist.control"(%{{.*}}, %{{.*}}) {id = "fw.done", lineage = "block", mesh = @tp, phase = "forward"} : (!dist.token, !dist.token) -> !dist.token
  %done = "dist.control"(%t0, %t1) {id = "fw.done", mesh = @tp, phase = "forward", lineage = "block"} : (!dist.token, !dist.token) -> !dist.token
  // CHECK: "dist.all_reduce"(%[[X]], %{{.*}}) {id = "ar", {{.*}}participants = array<i64: 0, 1, 2, 3>, phase = "forward", reduction = "sum"} : (tensor<2x8x16xf16>, !dist.token) -> tensor<2x8x16xf16>
  %ar = "dist.all_reduce"(%x, %done) {id = "ar", mesh = @tp, phase = "forward", participants = array<i64: 0, 1, 2, 3>, reduction = "sum", message_bytes = 512 : i64, lineage = "proj"} : (tensor<2x8x16xf16>, !dist.token) -> tensor<2x8x16xf16>
  // CHECK: "dist.reduce_scatter"(%{{.*}}) {axis = 1 : i64, id = "rs", {{.*}}reduction = "max"} : (tensor<2x8x16xf16>) -> tensor<2x2x16xf16>
  %rs = "dist.reduce_scatter"(%ar) {id = "rs", mesh = @tp, phase = "activation_gradient", participants = array<i64: 0, 1, 2, 3>, reduction = "max", axis = 1 : i64, message_bytes = 512 : i64, lineage = "proj"} : (tensor<2x8x16xf16>) -> tensor<2x2x16xf16>
  // CHECK: "dist.all_gather"(%{{.*}}) {axis = 1 : i64, id = "ag", {{.*}}} : (tensor<2x2x16xf16>) -> tensor<2x8x16xf16>
  %ag = "dist.all_gather"(%rs) {id = "ag", mesh = @tp, phase = "recommunication", participants = array<i64: 0, 1, 2, 3>, axis = 1 : i64, message_bytes = 512 : i64, lineage = "ln1"} : (tensor<2x2x16xf16>) -> tensor<2x8x16xf16>
  // CHECK: "dist.all_to_all"(%{{.*}}) {id = "a2a", {{.*}}} : (tensor<2x8x16xf16>) -> tensor<2x8x16xf16>
  %a2a = "dist.all_to_all"(%ag) {id = "a2a", mesh = @tp, phase = "forward", participants = array<i64: 0, 1, 2, 3>, message_bytes = 512 : i64, lineage = "moe"} : (tensor<2x8x16xf16>) -> tensor<2x8x16xf16>
  // CHECK: "dist.broadcast"(%{{.*}}) {id = "bc", {{.*}}root = 2 : i64}
  %bc = "dist.broadcast"(%a2a) {id = "bc", mesh = @tp, phase = "forward", participants = array<i64: 0, 1, 2, 3>, root = 2 : i64, message_bytes = 512 : i64, lineage = "embed"} : (tensor<2x8x16xf16>) -> tensor<2x8x16xf16>
  // CHECK: "dist.p2p"(%{{.*}}) {dest = 3 : i64, id = "send", {{.*}}source = 1 : i64}
  %pp = "dist.p2p"(%bc) {id = "send", mesh = @tp, phase = "forward", source = 1 : i64, dest = 3 : i64, message_bytes = 512 : i64, lineage = "stage"} : (tensor<2x8x16xf16>) -> tensor<2x8x16xf16>
  // CHECK: "dist.reshard"(%{{.*}}) {from_split_axes = {{\[\[}}], ["tp"], []], id = "rsh", {{.*}}to_split_axes = {{\[\[}}], [], []]}
  %r = "dist.reshard"(%pp) {id = "rsh", mesh = @tp, phase = "forward", from_split_axes = [[], ["tp"], []], to_split_axes = [[], [], []], lineage = "x"} : (tensor<2x8x16xf16>) -> tensor<2x8x16xf16>
  // A task that also produces a boundary value; communication with its
  // local work and the mesh axes it claims.
  // CHECK: %[[T:.*]]:2 = "dist.compute"(%{{.*}}) {{.*}} : (!dist.token) -> (!dist.token, tensor<2x8x16xf16>)
  %tv, %v = "dist.compute"(%done) {id = "fw.last", mesh = @tp, phase = "forward", engine = "vector", primitive = "residual_add", ops = 8 : i64, read_bytes = 16 : i64, write_bytes = 8 : i64, lineage = "res"} : (!dist.token) -> (!dist.token, tensor<2x8x16xf16>)
  // CHECK: "dist.all_reduce"(%[[T]]#1) {id = "ar.work", {{.*}}mesh_axes = ["tp"], {{.*}}ops = 256 : i64, {{.*}}read_bytes = 512 : i64, {{.*}}write_bytes = 512 : i64}
  %arw = "dist.all_reduce"(%v) {id = "ar.work", mesh = @tp, phase = "forward", participants = array<i64: 0, 1, 2, 3>, reduction = "sum", mesh_axes = ["tp"], message_bytes = 512 : i64, ops = 256 : i64, read_bytes = 512 : i64, write_bytes = 512 : i64, lineage = "res"} : (tensor<2x8x16xf16>) -> tensor<2x8x16xf16>
  // CHECK: "dist.output"(%{{.*}}) {id = "y", lineage = "block.out", mesh = @tp, split_axes = {{\[\[}}], [], []]}
  "dist.output"(%r) {id = "y", mesh = @tp, split_axes = [[], [], []], lineage = "block.out"} : (tensor<2x8x16xf16>) -> ()
  return
}

// CHECK-LABEL: func.func @async
func.func @async(%x: tensor<8x16xf32>, %t: !dist.token) -> tensor<8x16xf32> {
  // CHECK: %[[AR:.*]]:2 = "dist.all_reduce_start"(%{{.*}}, %{{.*}}) {{.*}} : (tensor<8x16xf32>, !dist.token) -> (!dist.async_handle, tensor<8x16xf32>)
  %h0, %y0 = "dist.all_reduce_start"(%x, %t) {id = "a.ar", mesh = @tp, phase = "forward", participants = array<i64: 0, 1, 2, 3>, reduction = "sum", message_bytes = 512 : i64, lineage = "l"} : (tensor<8x16xf32>, !dist.token) -> (!dist.async_handle, tensor<8x16xf32>)
  %h1, %y1 = "dist.reduce_scatter_start"(%x) {id = "a.rs", mesh = @tp, phase = "forward", participants = array<i64: 0, 1, 2, 3>, reduction = "min", message_bytes = 512 : i64, lineage = "l"} : (tensor<8x16xf32>) -> (!dist.async_handle, tensor<2x16xf32>)
  %h2, %y2 = "dist.all_gather_start"(%x) {id = "a.ag", mesh = @tp, phase = "forward", participants = array<i64: 0, 1, 2, 3>, message_bytes = 512 : i64, lineage = "l"} : (tensor<8x16xf32>) -> (!dist.async_handle, tensor<32x16xf32>)
  %h3, %y3 = "dist.all_to_all_start"(%x) {id = "a.a2a", mesh = @tp, phase = "forward", participants = array<i64: 0, 1, 2, 3>, message_bytes = 512 : i64, lineage = "l"} : (tensor<8x16xf32>) -> (!dist.async_handle, tensor<8x16xf32>)
  %h4, %y4 = "dist.broadcast_start"(%x) {id = "a.bc", mesh = @tp, phase = "forward", participants = array<i64: 0, 1>, root = 0 : i64, message_bytes = 512 : i64, lineage = "l"} : (tensor<8x16xf32>) -> (!dist.async_handle, tensor<8x16xf32>)
  %h5, %y5 = "dist.p2p_start"(%x) {id = "a.p2p", mesh = @tp, phase = "forward", source = 0 : i64, dest = 1 : i64, message_bytes = 512 : i64, lineage = "l"} : (tensor<8x16xf32>) -> (!dist.async_handle, tensor<8x16xf32>)
  // CHECK: "dist.wait"(%[[AR]]#0) : (!dist.async_handle) -> ()
  "dist.wait"(%h0) : (!dist.async_handle) -> ()
  "dist.wait"(%h1) : (!dist.async_handle) -> ()
  "dist.wait"(%h2) : (!dist.async_handle) -> ()
  "dist.wait"(%h3) : (!dist.async_handle) -> ()
  "dist.wait"(%h4) : (!dist.async_handle) -> ()
  "dist.wait"(%h5) : (!dist.async_handle) -> ()
  return %y0 : tensor<8x16xf32>
}

// CHECK-LABEL: func.func @redistribute
func.func @redistribute(%local: tensor<?x?xi64>, %g0: index, %g1: index, %o0: index, %o1: index, %ng0: index, %no0: index, %ns0: index) -> (tensor<?xi64>, tensor<?x?xi64>) {
  // CHECK: "dist.copy_reshape"({{.*}}) {operandSegmentSizes = array<i32: 1, 2, 2, 1, 1, 1>, team = 22 : i64} : (tensor<?x?xi64>, index, index, index, index, index, index, index) -> (!dist.async_handle, tensor<?xi64>)
  %h, %out = "dist.copy_reshape"(%local, %g0, %g1, %o0, %o1, %ng0, %no0, %ns0) {team = 22 : i64, operandSegmentSizes = array<i32: 1, 2, 2, 1, 1, 1>} : (tensor<?x?xi64>, index, index, index, index, index, index, index) -> (!dist.async_handle, tensor<?xi64>)
  "dist.wait"(%h) : (!dist.async_handle) -> ()
  // CHECK: "dist.copy_permute"({{.*}}) {axes = array<i64: 1, 0>, operandSegmentSizes = array<i32: 1, 2, 2, 2, 2>, team = @tp}
  %hp, %perm = "dist.copy_permute"(%local, %g0, %g1, %o0, %o1, %o1, %o0, %g1, %g0) {team = @tp, axes = array<i64: 1, 0>, operandSegmentSizes = array<i32: 1, 2, 2, 2, 2>} : (tensor<?x?xi64>, index, index, index, index, index, index, index, index) -> (!dist.async_handle, tensor<?x?xi64>)
  "dist.wait"(%hp) : (!dist.async_handle) -> ()
  return %out, %perm : tensor<?xi64>, tensor<?x?xi64>
}
