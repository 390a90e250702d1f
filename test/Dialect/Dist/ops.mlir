// Every dist op in the custom form: printing, re-parsing and printing again
// is the identity, and the generic form parses back to the same IR.
// RUN: blueprint-opt %s | blueprint-opt | FileCheck %s
// RUN: blueprint-opt %s > %t.1.mlir && blueprint-opt %t.1.mlir > %t.2.mlir && diff %t.1.mlir %t.2.mlir
// The generic form (closed choices as `i32` cases) round-trips too.
// RUN: blueprint-opt %s --mlir-print-op-generic > %t.generic.mlir
// RUN: FileCheck %s --check-prefix=GENERIC < %t.generic.mlir
// RUN: blueprint-opt %t.generic.mlir | diff %t.1.mlir -

// CHECK: dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"{{$}}
// GENERIC: "dist.header"() {model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111", schema_name = "blueprint.dist", schema_version = "1.0"} : () -> ()
dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
// CHECK: dist.mesh @tp(axes = ["tp"], shape = [4]){{$}}
// GENERIC: "dist.mesh"() {axes = ["tp"], shape = array<i64: 4>, sym_name = "tp"} : () -> ()
dist.mesh @tp(axes = ["tp"], shape = [4])
// CHECK: dist.mesh @grid(axes = ["dp", "tp"], shape = [2, 4]){{$}}
dist.mesh @grid(axes = ["dp", "tp"], shape = [2, 4])
// CHECK: dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [2, 4, 2]){{$}}
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [2, 4, 2])

// CHECK: dist.memory "mem.kv" on @tp kv_cache = 4096 {lineage = "kv"}{{$}}
// GENERIC: "dist.memory"() {bytes = 4096 : i64, id = "mem.kv", kind = 8 : i32, lineage = "kv", mesh = @tp} : () -> ()
dist.memory "mem.kv" on @tp kv_cache = 4096 {lineage = "kv"}
// State sharded over DP, on one pipeline stage.
// CHECK: dist.memory "mem.optimizer_state" on @world slice [-1, 0, -1] optimizer_state = 679477248 shared_by = 2 {lineage = "block"}{{$}}
// GENERIC: "dist.memory"() {bytes = 679477248 : i64, id = "mem.optimizer_state", kind = 7 : i32, lineage = "block", mesh = @world, shared_by = 2 : i64, slice = array<i64: -1, 0, -1>} : () -> ()
dist.memory "mem.optimizer_state" on @world slice [-1, 0, -1] optimizer_state = 679477248 shared_by = 2 {lineage = "block"}

// CHECK-LABEL: func.func @tasks
func.func @tasks() {
  // CHECK: %[[X:.*]] = dist.value "x" on @tp split {{\[\[}}], ["tp"], []] {lineage = "block.in"} : tensor<2x8x16xf16>
  // GENERIC: "dist.value"() {id = "x", lineage = "block.in", mesh = @tp, split_axes = {{\[\[}}], ["tp"], []]} : () -> tensor<2x8x16xf16>
  %x = dist.value "x" on @tp split [[], ["tp"], []] {lineage = "block.in"} : tensor<2x8x16xf16>
  // CHECK: %{{.*}} = dist.value "w" on @grid split {{\[\[}}], ["tp"]] owners [0, 1, 2, 3] {lineage = "w"} : tensor<16x16xf16>
  // GENERIC: "dist.value"() {id = "w", lineage = "w", mesh = @grid, owners = array<i64: 0, 1, 2, 3>, split_axes = {{\[\[}}], ["tp"]]} : () -> tensor<16x16xf16>
  %w = dist.value "w" on @grid split [[], ["tp"]] owners [0, 1, 2, 3] {lineage = "w"} : tensor<16x16xf16>
  // CHECK: %[[T0:.*]] = dist.compute "fw.fc1" on @tp phase = forward matrix matmul(%[[X]] : tensor<2x8x16xf16>) ops = 1024 read = 256 write = 128 {lineage = "fc1"} : !dist.token
  // GENERIC: "dist.compute"(%{{.*}}) {engine = 0 : i32, id = "fw.fc1", lineage = "fc1", mesh = @tp, ops = 1024 : i64, phase = 0 : i32, primitive = 0 : i32, read_bytes = 256 : i64, write_bytes = 128 : i64} : (tensor<2x8x16xf16>) -> !dist.token
  %t0 = dist.compute "fw.fc1" on @tp phase = forward matrix matmul(%x : tensor<2x8x16xf16>) ops = 1024 read = 256 write = 128 {lineage = "fc1"} : !dist.token
  // CHECK: %[[T1:.*]] = dist.compute "fw.gelu" on @tp ranks [0, 2] phase = forward vector gelu(%[[T0]] : !dist.token) ops = 64 read = 128 write = 128 {lineage = "gelu"} : !dist.token
  // GENERIC: "dist.compute"(%{{.*}}) {engine = 1 : i32, id = "fw.gelu", lineage = "gelu", mesh = @tp, ops = 64 : i64, phase = 0 : i32, primitive = 4 : i32, ranks = array<i64: 0, 2>, read_bytes = 128 : i64, write_bytes = 128 : i64} : (!dist.token) -> !dist.token
  %t1 = dist.compute "fw.gelu" on @tp ranks [0, 2] phase = forward vector gelu(%t0 : !dist.token) ops = 64 read = 128 write = 128 {lineage = "gelu"} : !dist.token
  // CHECK: %[[DONE:.*]] = dist.control "fw.done" on @tp phase = forward(%[[T0]], %[[T1]] : !dist.token, !dist.token) {lineage = "block"}{{$}}
  // GENERIC: "dist.control"(%{{.*}}, %{{.*}}) {id = "fw.done", lineage = "block", mesh = @tp, phase = 0 : i32} : (!dist.token, !dist.token) -> !dist.token
  %done = dist.control "fw.done" on @tp phase = forward(%t0, %t1 : !dist.token, !dist.token) {lineage = "block"}
  // A control task without dependencies.
  // CHECK: %{{.*}} = dist.control "fw.start" on @tp phase = forward {lineage = "block"}{{$}}
  %start = dist.control "fw.start" on @tp phase = forward {lineage = "block"}
  // CHECK: %[[AR:.*]] = dist.all_reduce %[[X]] after(%[[DONE]]) on @tp over [0, 1, 2, 3] reduction = sum phase = forward bytes = 512 {id = "ar", lineage = "proj"} : tensor<2x8x16xf16>
  // GENERIC: "dist.all_reduce"(%{{.*}}, %{{.*}}) {id = "ar", lineage = "proj", mesh = @tp, message_bytes = 512 : i64, participants = array<i64: 0, 1, 2, 3>, phase = 0 : i32, reduction = 0 : i32} : (tensor<2x8x16xf16>, !dist.token) -> tensor<2x8x16xf16>
  %ar = dist.all_reduce %x after(%done) on @tp over [0, 1, 2, 3] reduction = sum phase = forward bytes = 512 {id = "ar", lineage = "proj"} : tensor<2x8x16xf16>
  // CHECK: %[[RS:.*]] = dist.reduce_scatter %[[AR]] on @tp over [0, 1, 2, 3] reduction = max phase = activation_gradient bytes = 512 {axis = 1 : i64, id = "rs", lineage = "proj"} : tensor<2x8x16xf16> -> tensor<2x2x16xf16>
  // GENERIC: "dist.reduce_scatter"(%{{.*}}) {axis = 1 : i64, id = "rs", lineage = "proj", mesh = @tp, message_bytes = 512 : i64, participants = array<i64: 0, 1, 2, 3>, phase = 2 : i32, reduction = 1 : i32} : (tensor<2x8x16xf16>) -> tensor<2x2x16xf16>
  %rs = dist.reduce_scatter %ar on @tp over [0, 1, 2, 3] reduction = max phase = activation_gradient bytes = 512 {axis = 1 : i64, id = "rs", lineage = "proj"} : tensor<2x8x16xf16> -> tensor<2x2x16xf16>
  // CHECK: %[[AG:.*]] = dist.all_gather %[[RS]] on @tp over [0, 1, 2, 3] phase = recommunication bytes = 512 {axis = 1 : i64, id = "ag", lineage = "ln1"} : tensor<2x2x16xf16> -> tensor<2x8x16xf16>
  // GENERIC: "dist.all_gather"(%{{.*}}) {axis = 1 : i64, id = "ag", lineage = "ln1", mesh = @tp, message_bytes = 512 : i64, participants = array<i64: 0, 1, 2, 3>, phase = 5 : i32} : (tensor<2x2x16xf16>) -> tensor<2x8x16xf16>
  %ag = dist.all_gather %rs on @tp over [0, 1, 2, 3] phase = recommunication bytes = 512 {axis = 1 : i64, id = "ag", lineage = "ln1"} : tensor<2x2x16xf16> -> tensor<2x8x16xf16>
  // CHECK: %[[A2A:.*]] = dist.all_to_all %[[AG]] on @tp over [0, 1, 2, 3] phase = forward bytes = 512 {id = "a2a", lineage = "moe"} : tensor<2x8x16xf16>
  %a2a = dist.all_to_all %ag on @tp over [0, 1, 2, 3] phase = forward bytes = 512 {id = "a2a", lineage = "moe"} : tensor<2x8x16xf16>
  // CHECK: %[[BC:.*]] = dist.broadcast %[[A2A]] on @tp over [0, 1, 2, 3] root = 2 phase = forward bytes = 512 {id = "bc", lineage = "embed"} : tensor<2x8x16xf16>
  // GENERIC: "dist.broadcast"(%{{.*}}) {id = "bc", lineage = "embed", mesh = @tp, message_bytes = 512 : i64, participants = array<i64: 0, 1, 2, 3>, phase = 0 : i32, root = 2 : i64} : (tensor<2x8x16xf16>) -> tensor<2x8x16xf16>
  %bc = dist.broadcast %a2a on @tp over [0, 1, 2, 3] root = 2 phase = forward bytes = 512 {id = "bc", lineage = "embed"} : tensor<2x8x16xf16>
  // CHECK: %[[PP:.*]] = dist.p2p %[[BC]] on @tp from 1 to 3 phase = forward bytes = 512 {id = "send", lineage = "stage"} : tensor<2x8x16xf16>
  // GENERIC: "dist.p2p"(%{{.*}}) {dest = 3 : i64, id = "send", lineage = "stage", mesh = @tp, message_bytes = 512 : i64, phase = 0 : i32, source = 1 : i64} : (tensor<2x8x16xf16>) -> tensor<2x8x16xf16>
  %pp = dist.p2p %bc on @tp from 1 to 3 phase = forward bytes = 512 {id = "send", lineage = "stage"} : tensor<2x8x16xf16>
  // CHECK: %[[R:.*]] = dist.reshard %[[PP]] "rsh" on @tp phase = forward from {{\[\[}}], ["tp"], []] to {{\[\[}}], [], []] {lineage = "x"} : tensor<2x8x16xf16>
  // GENERIC: "dist.reshard"(%{{.*}}) {from_split_axes = {{\[\[}}], ["tp"], []], id = "rsh", lineage = "x", mesh = @tp, phase = 0 : i32, to_split_axes = {{\[\[}}], [], []]} : (tensor<2x8x16xf16>) -> tensor<2x8x16xf16>
  %r = dist.reshard %pp "rsh" on @tp phase = forward from [[], ["tp"], []] to [[], [], []] {lineage = "x"} : tensor<2x8x16xf16>
  // A task that also produces a boundary value; communication with its
  // local work and the mesh axes it claims.
  // CHECK: %{{.*}}, %[[V:.*]] = dist.compute "fw.last" on @tp phase = forward vector residual_add(%[[DONE]] : !dist.token) ops = 8 read = 16 write = 8 {lineage = "res"} : !dist.token, tensor<2x8x16xf16>
  // GENERIC: "dist.compute"(%{{.*}}) {{{.*}}primitive = 7 : i32{{.*}}} : (!dist.token) -> (!dist.token, tensor<2x8x16xf16>)
  %tv, %v = dist.compute "fw.last" on @tp phase = forward vector residual_add(%done : !dist.token) ops = 8 read = 16 write = 8 {lineage = "res"} : !dist.token, tensor<2x8x16xf16>
  // CHECK: dist.all_reduce %[[V]] on @tp over [0, 1, 2, 3] axes ["tp"] reduction = sum phase = forward bytes = 512 {id = "ar.work", lineage = "res", ops = 256 : i64, read_bytes = 512 : i64, write_bytes = 512 : i64} : tensor<2x8x16xf16>
  // GENERIC: "dist.all_reduce"(%{{.*}}) {id = "ar.work", lineage = "res", mesh = @tp, mesh_axes = ["tp"], message_bytes = 512 : i64, ops = 256 : i64, participants = array<i64: 0, 1, 2, 3>, phase = 0 : i32, read_bytes = 512 : i64, reduction = 0 : i32, write_bytes = 512 : i64}
  %arw = dist.all_reduce %v on @tp over [0, 1, 2, 3] axes ["tp"] reduction = sum phase = forward bytes = 512 {id = "ar.work", lineage = "res", ops = 256 : i64, read_bytes = 512 : i64, write_bytes = 512 : i64} : tensor<2x8x16xf16>
  // A collective tiled with the linear it drains (mapping.tp_overlap).
  // CHECK: %[[LIN:.*]] = dist.compute "attn.proj.fwd" on @tp phase = forward matrix matmul(%[[DONE]] : !dist.token) ops = 64 read = 32 write = 16 {lineage = "proj"} : !dist.token
  %lin = dist.compute "attn.proj.fwd" on @tp phase = forward matrix matmul(%done : !dist.token) ops = 64 read = 32 write = 16 {lineage = "proj"} : !dist.token
  // CHECK: dist.all_reduce %[[LIN]] on @tp over [0, 1, 2, 3] reduction = sum tiled_with "attn.proj.fwd" tiles = 4 overlap = ring phase = forward bytes = 512 {id = "attn.tp_exit.fwd", lineage = "proj", ops = 384 : i64} : !dist.token
  // GENERIC: "dist.all_reduce"(%{{.*}}) {id = "attn.tp_exit.fwd", lineage = "proj", mesh = @tp, message_bytes = 512 : i64, ops = 384 : i64, overlap = 0 : i32, participants = array<i64: 0, 1, 2, 3>, phase = 0 : i32, reduction = 0 : i32, tiled_with = "attn.proj.fwd", tiles = 4 : i64} : (!dist.token) -> !dist.token
  %tiled = dist.all_reduce %lin on @tp over [0, 1, 2, 3] reduction = sum tiled_with "attn.proj.fwd" tiles = 4 overlap = ring phase = forward bytes = 512 {id = "attn.tp_exit.fwd", lineage = "proj", ops = 384 : i64} : !dist.token
  // CHECK: %{{.*}}, %{{.*}} = dist.all_gather_start %[[LIN]] on @tp over [0, 1, 2, 3] tiled_with "attn.proj.fwd" tiles = 4 overlap = pipe phase = forward bytes = 512 {id = "ag.tiled", lineage = "proj"} : !dist.token -> !dist.token
  %h, %agt = dist.all_gather_start %lin on @tp over [0, 1, 2, 3] tiled_with "attn.proj.fwd" tiles = 4 overlap = pipe phase = forward bytes = 512 {id = "ag.tiled", lineage = "proj"} : !dist.token -> !dist.token
  dist.wait %h
  // CHECK: dist.output %[[R]] "y" on @tp split {{\[\[}}], [], []] {lineage = "block.out"} : tensor<2x8x16xf16>
  // GENERIC: "dist.output"(%{{.*}}) {id = "y", lineage = "block.out", mesh = @tp, split_axes = {{\[\[}}], [], []]} : (tensor<2x8x16xf16>) -> ()
  dist.output %r "y" on @tp split [[], [], []] {lineage = "block.out"} : tensor<2x8x16xf16>
  return
}

// Groups named by mesh axes (one group per combination of the other
// coordinates, no rank list), tasks on a slice of the mesh, point-to-point
// along an axis, and work shared by a group.
// CHECK-LABEL: func.func @slices_and_axes
func.func @slices_and_axes(%t: !dist.token, %x: tensor<4x8xf16>) {
  // CHECK: %[[C:.*]] = dist.compute "optim.adam" on @world slice [-1, 2, -1] phase = optimizer vector adam(%{{.*}} : !dist.token) ops = 1200 read = 4800 write = 4800 shared_by = 2 {lineage = "block"} : !dist.token
  // GENERIC: "dist.compute"(%{{.*}}) {engine = 1 : i32, id = "optim.adam", lineage = "block", mesh = @world, ops = 1200 : i64, phase = 4 : i32, primitive = 9 : i32, read_bytes = 4800 : i64, shared_by = 2 : i64, slice = array<i64: -1, 2, -1>, write_bytes = 4800 : i64} : (!dist.token) -> !dist.token
  %c = dist.compute "optim.adam" on @world slice [-1, 2, -1] phase = optimizer vector adam(%t : !dist.token) ops = 1200 read = 4800 write = 4800 shared_by = 2 {lineage = "block"} : !dist.token
  // CHECK: %[[G:.*]] = dist.all_reduce %[[C]] on @world slice [-1, 2, -1] axes ["dp"] reduction = sum phase = weight_gradient bytes = 4096 {id = "dp.grad_reduce", lineage = "block"} : !dist.token
  // GENERIC: "dist.all_reduce"(%{{.*}}) {id = "dp.grad_reduce", lineage = "block", mesh = @world, mesh_axes = ["dp"], message_bytes = 4096 : i64, phase = 3 : i32, reduction = 0 : i32, slice = array<i64: -1, 2, -1>} : (!dist.token) -> !dist.token
  %g = dist.all_reduce %c on @world slice [-1, 2, -1] axes ["dp"] reduction = sum phase = weight_gradient bytes = 4096 {id = "dp.grad_reduce", lineage = "block"} : !dist.token
  // CHECK: %{{.*}} = dist.all_gather %{{.*}} after(%[[G]]) on @world axes ["tp"] phase = forward bytes = 128 {id = "tp.ag", lineage = "ln"} : tensor<4x8xf16> -> tensor<8x8xf16>
  %ag = dist.all_gather %x after(%g) on @world axes ["tp"] phase = forward bytes = 128 {id = "tp.ag", lineage = "ln"} : tensor<4x8xf16> -> tensor<8x8xf16>
  // CHECK: %{{.*}} = dist.reduce_scatter %{{.*}} on @world slice [0, -1, -1] axes ["pp", "tp"] reduction = prod phase = activation_gradient bytes = 64 {axis = 1 : i64, id = "rs.slice", lineage = "ln"} : tensor<4x8xf16> -> tensor<4x1xf16>
  // GENERIC: "dist.reduce_scatter"(%{{.*}}) {axis = 1 : i64, id = "rs.slice", lineage = "ln", mesh = @world, mesh_axes = ["pp", "tp"], message_bytes = 64 : i64, phase = 2 : i32, reduction = 3 : i32, slice = array<i64: 0, -1, -1>}
  %rs = dist.reduce_scatter %x on @world slice [0, -1, -1] axes ["pp", "tp"] reduction = prod phase = activation_gradient bytes = 64 {axis = 1 : i64, id = "rs.slice", lineage = "ln"} : tensor<4x8xf16> -> tensor<4x1xf16>
  // CHECK: %{{.*}} = dist.all_to_all %{{.*}} on @world ranks [0, 1, 2, 3] over [0, 1] phase = forward bytes = 64 {id = "a2a.ranks", lineage = "moe"} : tensor<4x8xf16>
  // GENERIC: "dist.all_to_all"(%{{.*}}) {id = "a2a.ranks", lineage = "moe", mesh = @world, message_bytes = 64 : i64, participants = array<i64: 0, 1>, phase = 0 : i32, ranks = array<i64: 0, 1, 2, 3>}
  %a2a = dist.all_to_all %x on @world ranks [0, 1, 2, 3] over [0, 1] phase = forward bytes = 64 {id = "a2a.ranks", lineage = "moe"} : tensor<4x8xf16>
  // CHECK: %{{.*}} = dist.broadcast %{{.*}} on @world over [4, 5] root = 5 phase = prefill bytes = 64 {id = "bc.prefill", lineage = "embed"} : tensor<4x8xf16>
  // GENERIC: "dist.broadcast"(%{{.*}}) {{{.*}}phase = 6 : i32, root = 5 : i64}
  %bc = dist.broadcast %x on @world over [4, 5] root = 5 phase = prefill bytes = 64 {id = "bc.prefill", lineage = "embed"} : tensor<4x8xf16>
  // CHECK: %{{.*}} = dist.p2p %[[G]] on @world slice [-1, -1, 1] along "pp" from 2 to 3 phase = decode bytes = 50331648 {id = "s2.c0.send", lineage = "block.out"} : !dist.token
  // GENERIC: "dist.p2p"(%{{.*}}) {along = "pp", dest = 3 : i64, id = "s2.c0.send", lineage = "block.out", mesh = @world, message_bytes = 50331648 : i64, phase = 7 : i32, slice = array<i64: -1, -1, 1>, source = 2 : i64} : (!dist.token) -> !dist.token
  %send = dist.p2p %g on @world slice [-1, -1, 1] along "pp" from 2 to 3 phase = decode bytes = 50331648 {id = "s2.c0.send", lineage = "block.out"} : !dist.token
  // CHECK: %{{.*}} = dist.compute "recompute.ln" on @world phase = recompute vector layer_norm ops = 10 read = 20 write = 20 {lineage = "ln"} : !dist.token
  // GENERIC: "dist.compute"() {engine = 1 : i32, id = "recompute.ln", lineage = "ln", mesh = @world, ops = 10 : i64, phase = 1 : i32, primitive = 2 : i32, read_bytes = 20 : i64, write_bytes = 20 : i64} : () -> !dist.token
  %re = dist.compute "recompute.ln" on @world phase = recompute vector layer_norm ops = 10 read = 20 write = 20 {lineage = "ln"} : !dist.token
  return
}

// The start form of every communication and its wait.
// CHECK-LABEL: func.func @async
func.func @async(%x: tensor<8x16xf32>, %t: !dist.token) -> tensor<8x16xf32> {
  // CHECK: %[[H0:.*]], %[[Y0:.*]] = dist.all_reduce_start %{{.*}} after(%{{.*}}) on @tp over [0, 1, 2, 3] reduction = sum phase = forward bytes = 512 {id = "a.ar", lineage = "l"} : tensor<8x16xf32>
  // GENERIC: %{{.*}}:2 = "dist.all_reduce_start"(%{{.*}}, %{{.*}}) {id = "a.ar", lineage = "l", mesh = @tp, message_bytes = 512 : i64, participants = array<i64: 0, 1, 2, 3>, phase = 0 : i32, reduction = 0 : i32} : (tensor<8x16xf32>, !dist.token) -> (!dist.async_handle, tensor<8x16xf32>)
  %h0, %y0 = dist.all_reduce_start %x after(%t) on @tp over [0, 1, 2, 3] reduction = sum phase = forward bytes = 512 {id = "a.ar", lineage = "l"} : tensor<8x16xf32>
  // CHECK: %[[H1:.*]], %{{.*}} = dist.reduce_scatter_start %{{.*}} on @tp over [0, 1, 2, 3] reduction = min phase = forward bytes = 512 {id = "a.rs", lineage = "l"} : tensor<8x16xf32> -> tensor<2x16xf32>
  // GENERIC: "dist.reduce_scatter_start"(%{{.*}}) {{{.*}}reduction = 2 : i32} : (tensor<8x16xf32>) -> (!dist.async_handle, tensor<2x16xf32>)
  %h1, %y1 = dist.reduce_scatter_start %x on @tp over [0, 1, 2, 3] reduction = min phase = forward bytes = 512 {id = "a.rs", lineage = "l"} : tensor<8x16xf32> -> tensor<2x16xf32>
  // CHECK: %[[H2:.*]], %{{.*}} = dist.all_gather_start %{{.*}} on @tp over [0, 1, 2, 3] phase = forward bytes = 512 {id = "a.ag", lineage = "l"} : tensor<8x16xf32> -> tensor<32x16xf32>
  %h2, %y2 = dist.all_gather_start %x on @tp over [0, 1, 2, 3] phase = forward bytes = 512 {id = "a.ag", lineage = "l"} : tensor<8x16xf32> -> tensor<32x16xf32>
  // CHECK: %[[H3:.*]], %{{.*}} = dist.all_to_all_start %{{.*}} on @tp over [0, 1, 2, 3] phase = forward bytes = 512 {id = "a.a2a", lineage = "l"} : tensor<8x16xf32>
  %h3, %y3 = dist.all_to_all_start %x on @tp over [0, 1, 2, 3] phase = forward bytes = 512 {id = "a.a2a", lineage = "l"} : tensor<8x16xf32>
  // CHECK: %[[H4:.*]], %{{.*}} = dist.broadcast_start %{{.*}} on @tp over [0, 1] root = 0 phase = forward bytes = 512 {id = "a.bc", lineage = "l"} : tensor<8x16xf32>
  %h4, %y4 = dist.broadcast_start %x on @tp over [0, 1] root = 0 phase = forward bytes = 512 {id = "a.bc", lineage = "l"} : tensor<8x16xf32>
  // CHECK: %[[H5:.*]], %{{.*}} = dist.p2p_start %{{.*}} on @tp from 0 to 1 phase = forward bytes = 512 {id = "a.p2p", lineage = "l"} : tensor<8x16xf32>
  // GENERIC: "dist.p2p_start"(%{{.*}}) {dest = 1 : i64, id = "a.p2p", lineage = "l", mesh = @tp, message_bytes = 512 : i64, phase = 0 : i32, source = 0 : i64} : (tensor<8x16xf32>) -> (!dist.async_handle, tensor<8x16xf32>)
  %h5, %y5 = dist.p2p_start %x on @tp from 0 to 1 phase = forward bytes = 512 {id = "a.p2p", lineage = "l"} : tensor<8x16xf32>
  // CHECK: %[[H6:.*]], %{{.*}} = dist.p2p_start %{{.*}} on @world along "pp" from 0 to 1 phase = forward bytes = 512 {id = "a.p2p.pp", lineage = "l"} : tensor<8x16xf32>
  %h6, %y6 = dist.p2p_start %x on @world along "pp" from 0 to 1 phase = forward bytes = 512 {id = "a.p2p.pp", lineage = "l"} : tensor<8x16xf32>
  // CHECK: dist.wait %[[H0]]{{$}}
  // GENERIC: "dist.wait"(%{{.*}}) : (!dist.async_handle) -> ()
  dist.wait %h0
  // CHECK: dist.wait %[[H1]]{{$}}
  dist.wait %h1
  // CHECK: dist.wait %[[H2]]{{$}}
  dist.wait %h2
  // CHECK: dist.wait %[[H3]]{{$}}
  dist.wait %h3
  // CHECK: dist.wait %[[H4]]{{$}}
  dist.wait %h4
  // CHECK: dist.wait %[[H5]]{{$}}
  dist.wait %h5
  // CHECK: dist.wait %[[H6]]{{$}}
  dist.wait %h6
  // CHECK: return %[[Y0]] : tensor<8x16xf32>
  return %y0 : tensor<8x16xf32>
}

// CHECK-LABEL: func.func @redistribute
func.func @redistribute(%local: tensor<?x?xi64>, %g0: index, %g1: index, %o0: index, %o1: index, %ng0: index, %no0: index, %ns0: index) -> (tensor<?xi64>, tensor<?x?xi64>) {
  // CHECK: %[[H:.*]], %[[OUT:.*]] = dist.copy_reshape %arg0 g_shape %arg1, %arg2 l_offs %arg3, %arg4 to n_g_shape %arg5 n_offs %arg6 n_shape %arg7 {team = 22 : i64} : tensor<?x?xi64> -> tensor<?xi64>
  // GENERIC: "dist.copy_reshape"({{.*}}) {operandSegmentSizes = array<i32: 1, 2, 2, 1, 1, 1>, team = 22 : i64} : (tensor<?x?xi64>, index, index, index, index, index, index, index) -> (!dist.async_handle, tensor<?xi64>)
  %h, %out = dist.copy_reshape %local g_shape %g0, %g1 l_offs %o0, %o1 to n_g_shape %ng0 n_offs %no0 n_shape %ns0 {team = 22 : i64} : tensor<?x?xi64> -> tensor<?xi64>
  // CHECK-NEXT: dist.wait %[[H]]{{$}}
  dist.wait %h
  // CHECK: %[[HP:.*]], %[[PERM:.*]] = dist.copy_permute %arg0 g_shape %arg1, %arg2 l_offs %arg3, %arg4 n_offs %arg4, %arg3 n_shape %arg2, %arg1 axes [1, 0] {team = @tp} : tensor<?x?xi64> -> tensor<?x?xi64>
  // GENERIC: "dist.copy_permute"({{.*}}) {axes = array<i64: 1, 0>, operandSegmentSizes = array<i32: 1, 2, 2, 2, 2>, team = @tp} : (tensor<?x?xi64>, index, index, index, index, index, index, index, index) -> (!dist.async_handle, tensor<?x?xi64>)
  %hp, %perm = dist.copy_permute %local g_shape %g0, %g1 l_offs %o0, %o1 n_offs %o1, %o0 n_shape %g1, %g0 axes [1, 0] {team = @tp} : tensor<?x?xi64> -> tensor<?x?xi64>
  // CHECK-NEXT: dist.wait %[[HP]]{{$}}
  dist.wait %hp
  // CHECK: return %[[OUT]], %[[PERM]] : tensor<?xi64>, tensor<?x?xi64>
  return %out, %perm : tensor<?xi64>, tensor<?x?xi64>
}

// CHECK-LABEL: func.func @rank_queries
func.func @rank_queries() -> (index, index) {
  // CHECK: %[[RANK:.*]] = dist.rank on @world{{$}}
  // GENERIC: "dist.rank"() {mesh = @world} : () -> index
  %r = dist.rank on @world
  // CHECK: %[[COUNT:.*]] = dist.num_ranks on @world{{$}}
  // GENERIC: "dist.num_ranks"() {mesh = @world} : () -> index
  %n = dist.num_ranks on @world
  // CHECK: return %[[RANK]], %[[COUNT]] : index, index
  return %r, %n : index, index
}

// The generic form, with closed choices as their `i32` cases, is still
// accepted as input and prints in the custom form.
// CHECK-LABEL: func.func @generic_input
func.func @generic_input(%t: !dist.token) {
  // CHECK: %[[C:.*]] = dist.compute "g.c" on @tp phase = forward vector gelu(%{{.*}} : !dist.token) ops = 1 read = 2 write = 2 {lineage = "l"} : !dist.token
  %c = "dist.compute"(%t) {id = "g.c", mesh = @tp, phase = 0 : i32, lineage = "l", engine = 1 : i32, primitive = 4 : i32, ops = 1 : i64, read_bytes = 2 : i64, write_bytes = 2 : i64} : (!dist.token) -> !dist.token
  // CHECK: %[[H:.*]], %{{.*}} = dist.all_reduce_start %[[C]] on @tp over [0, 1] reduction = max phase = weight_gradient bytes = 8 {id = "g.ar", lineage = "l"} : !dist.token
  %h, %y = "dist.all_reduce_start"(%c) {id = "g.ar", mesh = @tp, phase = 3 : i32, lineage = "l", participants = array<i64: 0, 1>, reduction = 1 : i32, message_bytes = 8 : i64} : (!dist.token) -> (!dist.async_handle, !dist.token)
  // CHECK: dist.wait %[[H]]{{$}}
  "dist.wait"(%h) : (!dist.async_handle) -> ()
  return
}
