// Every plan op in the custom form: printing, re-parsing and printing again
// is the identity, and the generic form parses back to the same IR.
// RUN: blueprint-opt %s | blueprint-opt | FileCheck %s
// RUN: blueprint-opt %s > %t.1.mlir && blueprint-opt %t.1.mlir > %t.2.mlir && diff %t.1.mlir %t.2.mlir
// The generic form (closed choices as `i32` cases) round-trips too.
// RUN: blueprint-opt %s --mlir-print-op-generic > %t.generic.mlir
// RUN: FileCheck %s --check-prefix=GENERIC < %t.generic.mlir
// RUN: blueprint-opt %t.generic.mlir | diff %t.1.mlir -

// CHECK: plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"{{$}}
// GENERIC: "plan.header"() {schema_name = "blueprint.plan", schema_version = "1.0", source_digest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"} : () -> ()
plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
// CHECK: plan.buffer @kv_cache kv_cache size = 8388608 align = 64 in local {lineage = "kv"}{{$}}
// GENERIC: "plan.buffer"() {alignment = 64 : i64, contents = 8 : i32, lineage = "kv", memory_space = 0 : i32, size = 8388608 : i64, sym_name = "kv_cache"} : () -> ()
plan.buffer @kv_cache kv_cache size = 8388608 align = 64 in local {lineage = "kv"}
// CHECK: plan.buffer @staging boundary_value size = 0 align = 1 in host {lineage = "x"}{{$}}
// GENERIC: "plan.buffer"() {alignment = 1 : i64, contents = 9 : i32, lineage = "x", memory_space = 1 : i32, size = 0 : i64, sym_name = "staging"} : () -> ()
plan.buffer @staging boundary_value size = 0 align = 1 in host {lineage = "x"}
// A buffer sharded over a group: the group's total and its size.
// CHECK: plan.buffer @optimizer_state optimizer_state size = 679477248 align = 256 in shared shared_by = 12 {lineage = "mem.optimizer_state"}{{$}}
// GENERIC: "plan.buffer"() {alignment = 256 : i64, contents = 7 : i32, lineage = "mem.optimizer_state", memory_space = 2 : i32, shared_by = 12 : i64, size = 679477248 : i64, sym_name = "optimizer_state"} : () -> ()
plan.buffer @optimizer_state optimizer_state size = 679477248 align = 256 in shared shared_by = 12 {lineage = "mem.optimizer_state"}
// CHECK: plan.objective latency{{$}}
// GENERIC: "plan.objective"() {kind = 0 : i32} : () -> ()
plan.objective latency
// CHECK: plan.objective peak_memory{{$}}
// GENERIC: "plan.objective"() {kind = 1 : i32} : () -> ()
plan.objective peak_memory

// CHECK-LABEL: func.func @plan
func.func @plan() {
  // CHECK: %[[A:.*]] = plan.compute_task "fw.qkv" matrix_multiply phase = forward ops = 100 read = 40 write = 20 demand(100, 60, 0) ranks = 8 group = compute {lineage = "fw.qkv"}{{$}}
  // GENERIC: "plan.compute_task"() {capability = 0 : i32, compute_demand = 100 : i64, group = 0 : i32, id = "fw.qkv", lineage = "fw.qkv", memory_demand = 60 : i64, network_demand = 0 : i64, ops = 100 : i64, phase = 0 : i32, ranks = 8 : i64, read_bytes = 40 : i64, write_bytes = 20 : i64} : () -> !plan.token
  %a = plan.compute_task "fw.qkv" matrix_multiply phase = forward ops = 100 read = 40 write = 20 demand(100, 60, 0) ranks = 8 group = compute {lineage = "fw.qkv"}
  // CHECK: %[[B:.*]] = plan.collective_task "fw.ar" after(%[[A]]) all_reduce bytes = 64 phase = forward ops = 0 read = 0 write = 0 demand(0, 0, 64) ranks = 8 group = network {lineage = "fw.ar"}{{$}}
  // GENERIC: "plan.collective_task"(%{{.*}}) {capability = 0 : i32, compute_demand = 0 : i64, group = 1 : i32, id = "fw.ar", lineage = "fw.ar", memory_demand = 0 : i64, message_bytes = 64 : i64, network_demand = 64 : i64, ops = 0 : i64, phase = 0 : i32, ranks = 8 : i64, read_bytes = 0 : i64, write_bytes = 0 : i64} : (!plan.token) -> !plan.token
  %b = plan.collective_task "fw.ar" after(%a) all_reduce bytes = 64 phase = forward ops = 0 read = 0 write = 0 demand(0, 0, 64) ranks = 8 group = network {lineage = "fw.ar"}
  // A collective tiled with the linear it feeds (mapping.tp_overlap).
  // CHECK: plan.collective_task "fw.ag" after(%[[B]]) all_gather bytes = 64 phase = forward ops = 0 read = 0 write = 0 demand(0, 0, 64) ranks = 8 group = network tiled_with "fw.qkv" tiles = 8 overlap = pipe {lineage = "fw.qkv"}{{$}}
  // GENERIC: "plan.collective_task"(%{{.*}}) {capability = 2 : i32, {{.*}}overlap = 1 : i32, phase = 0 : i32, {{.*}}tiled_with = "fw.qkv", tiles = 8 : i64
  %tiled = plan.collective_task "fw.ag" after(%b) all_gather bytes = 64 phase = forward ops = 0 read = 0 write = 0 demand(0, 0, 64) ranks = 8 group = network tiled_with "fw.qkv" tiles = 8 overlap = pipe {lineage = "fw.qkv"}
  // CHECK: %[[C:.*]] = plan.compute_task "fw.gelu" after(%[[A]], %[[B]]) vector_elementwise phase = forward ops = 100 read = 40 write = 20 demand(100, 60, 0) ranks = 8 group = compute {lineage = "fw.qkv"}{{$}}
  // GENERIC: "plan.compute_task"(%{{.*}}, %{{.*}}) {capability = 1 : i32,
  %c = plan.compute_task "fw.gelu" after(%a, %b) vector_elementwise phase = forward ops = 100 read = 40 write = 20 demand(100, 60, 0) ranks = 8 group = compute {lineage = "fw.qkv"}
  // CHECK: %[[D:.*]] = plan.collective_task "bw.rs" after(%[[C]]) reduce_scatter bytes = 64 phase = activation_gradient ops = 0 read = 0 write = 0 demand(0, 0, 64) ranks = 8 group = network {lineage = "fw.ar", mesh_axes = ["tp"]}{{$}}
  // GENERIC: "plan.collective_task"(%{{.*}}) {capability = 1 : i32, {{.*}}mesh_axes = ["tp"], {{.*}}phase = 2 : i32,
  %d = plan.collective_task "bw.rs" after(%c) reduce_scatter bytes = 64 phase = activation_gradient ops = 0 read = 0 write = 0 demand(0, 0, 64) ranks = 8 group = network {lineage = "fw.ar", mesh_axes = ["tp"]}
  // CHECK: %[[E:.*]] = plan.collective_task "bw.ag" after(%[[D]]) all_gather bytes = 64 phase = recommunication ops = 0 read = 0 write = 0 demand(0, 0, 64) ranks = 8 group = network {lineage = "fw.ar"}{{$}}
  // GENERIC: "plan.collective_task"(%{{.*}}) {capability = 2 : i32, {{.*}}phase = 5 : i32,
  %e = plan.collective_task "bw.ag" after(%d) all_gather bytes = 64 phase = recommunication ops = 0 read = 0 write = 0 demand(0, 0, 64) ranks = 8 group = network {lineage = "fw.ar"}
  // CHECK: %[[F:.*]] = plan.collective_task "bw.a2a" after(%[[E]]) all_to_all bytes = 64 phase = forward ops = 0 read = 0 write = 0 demand(0, 0, 64) ranks = 8 group = network {lineage = "fw.ar"}{{$}}
  // GENERIC: "plan.collective_task"(%{{.*}}) {capability = 3 : i32,
  %f = plan.collective_task "bw.a2a" after(%e) all_to_all bytes = 64 phase = forward ops = 0 read = 0 write = 0 demand(0, 0, 64) ranks = 8 group = network {lineage = "fw.ar"}
  // CHECK: %[[G:.*]] = plan.collective_task "bw.bc" after(%[[F]]) broadcast bytes = 64 phase = prefill ops = 0 read = 0 write = 0 demand(0, 0, 64) ranks = 8 group = network {lineage = "fw.ar"}{{$}}
  // GENERIC: "plan.collective_task"(%{{.*}}) {capability = 4 : i32, {{.*}}phase = 6 : i32,
  %g = plan.collective_task "bw.bc" after(%f) broadcast bytes = 64 phase = prefill ops = 0 read = 0 write = 0 demand(0, 0, 64) ranks = 8 group = network {lineage = "fw.ar"}
  // CHECK: %[[H:.*]] = plan.collective_task "bw.p2p" after(%[[G]]) point_to_point bytes = 64 phase = decode ops = 0 read = 0 write = 0 demand(0, 0, 64) ranks = 8 group = network {lineage = "fw.ar"}{{$}}
  // GENERIC: "plan.collective_task"(%{{.*}}) {capability = 5 : i32, {{.*}}phase = 7 : i32,
  %h = plan.collective_task "bw.p2p" after(%g) point_to_point bytes = 64 phase = decode ops = 0 read = 0 write = 0 demand(0, 0, 64) ranks = 8 group = network {lineage = "fw.ar"}
  // Work a group splits evenly (a sharded optimizer step): the group's totals.
  // CHECK: plan.compute_task "optim.adam" after(%[[H]]) vector_elementwise phase = optimizer ops = 1200 read = 4800 write = 4800 demand(1200, 9600, 0) ranks = 12 group = compute shared_by = 12 {lineage = "optim.adam"}{{$}}
  // GENERIC: "plan.compute_task"(%{{.*}}) {capability = 1 : i32, {{.*}}phase = 4 : i32, ranks = 12 : i64, read_bytes = 4800 : i64, shared_by = 12 : i64, write_bytes = 4800 : i64} : (!plan.token) -> !plan.token
  %o = plan.compute_task "optim.adam" after(%h) vector_elementwise phase = optimizer ops = 1200 read = 4800 write = 4800 demand(1200, 9600, 0) ranks = 12 group = compute shared_by = 12 {lineage = "optim.adam"}
  // CHECK: plan.compute_task "recompute.ln" matrix_multiply phase = recompute ops = 1 read = 1 write = 1 demand(1, 2, 0) ranks = 1 group = compute {lineage = "ln"}{{$}}
  // GENERIC: "plan.compute_task"() {{{.*}}phase = 1 : i32,
  %r = plan.compute_task "recompute.ln" matrix_multiply phase = recompute ops = 1 read = 1 write = 1 demand(1, 2, 0) ranks = 1 group = compute {lineage = "ln"}
  // CHECK: plan.compute_task "bw.wgrad" matrix_multiply phase = weight_gradient ops = 1 read = 1 write = 1 demand(1, 2, 0) ranks = 1 group = compute {lineage = "wgrad"}{{$}}
  // GENERIC: "plan.compute_task"() {{{.*}}phase = 3 : i32,
  %wg = plan.compute_task "bw.wgrad" matrix_multiply phase = weight_gradient ops = 1 read = 1 write = 1 demand(1, 2, 0) ranks = 1 group = compute {lineage = "wgrad"}
  return
}

// The generic form, with closed choices as their `i32` cases, is still
// accepted as input and prints in the custom form.
// CHECK-LABEL: func.func @generic_input
func.func @generic_input() {
  // CHECK: %[[A:.*]] = plan.compute_task "g.t" vector_elementwise phase = decode ops = 4 read = 8 write = 8 demand(4, 16, 0) ranks = 2 group = compute {lineage = "g"}{{$}}
  %a = "plan.compute_task"() {id = "g.t", capability = 1 : i32, group = 0 : i32, lineage = "g", phase = 7 : i32, ops = 4 : i64, read_bytes = 8 : i64, write_bytes = 8 : i64, compute_demand = 4 : i64, memory_demand = 16 : i64, network_demand = 0 : i64, ranks = 2 : i64} : () -> !plan.token
  // CHECK: plan.collective_task "g.p" after(%[[A]]) point_to_point bytes = 8 phase = decode ops = 0 read = 0 write = 0 demand(0, 0, 8) ranks = 2 group = network {lineage = "g"}{{$}}
  %b = "plan.collective_task"(%a) {id = "g.p", capability = 5 : i32, group = 1 : i32, lineage = "g", phase = 7 : i32, ops = 0 : i64, read_bytes = 0 : i64, write_bytes = 0 : i64, compute_demand = 0 : i64, memory_demand = 0 : i64, network_demand = 8 : i64, ranks = 2 : i64, message_bytes = 8 : i64} : (!plan.token) -> !plan.token
  return
}
// CHECK: plan.buffer @g.buffer weight size = 16 align = 16 in local {lineage = "g"}{{$}}
"plan.buffer"() {sym_name = "g.buffer", size = 16 : i64, alignment = 16 : i64, memory_space = 0 : i32, contents = 0 : i32, lineage = "g"} : () -> ()
