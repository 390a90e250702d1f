// RUN: blueprint-opt %s | FileCheck %s
// RUN: blueprint-opt %s > %t.1.mlir && blueprint-opt %t.1.mlir > %t.2.mlir && diff %t.1.mlir %t.2.mlir
// RUN: blueprint-opt %s --mlir-print-op-generic | blueprint-opt | diff %t.1.mlir -

// CHECK: "plan.header"() {schema_name = "blueprint.plan", schema_version = "1.0", source_digest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"}
"plan.header"() {schema_name = "blueprint.plan", schema_version = "1.0", source_digest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"} : () -> ()
// CHECK: "plan.buffer"() {alignment = 64 : i64, contents = "kv_cache", lineage = "kv", memory_space = "local", size = 8388608 : i64, sym_name = "kv_cache"}
"plan.buffer"() {sym_name = "kv_cache", size = 8388608 : i64, alignment = 64 : i64, memory_space = "local", contents = "kv_cache", lineage = "kv"} : () -> ()
// CHECK: "plan.buffer"() {alignment = 1 : i64, contents = "boundary_value", lineage = "x", memory_space = "host", size = 0 : i64, sym_name = "staging"}
"plan.buffer"() {sym_name = "staging", size = 0 : i64, alignment = 1 : i64, memory_space = "host", contents = "boundary_value", lineage = "x"} : () -> ()
// CHECK: "plan.objective"() {kind = "latency"}
"plan.objective"() {kind = "latency"} : () -> ()
// CHECK: "plan.objective"() {kind = "peak_memory"}
"plan.objective"() {kind = "peak_memory"} : () -> ()

// CHECK-LABEL: func.func @plan
func.func @plan() {
  // CHECK: %[[A:.*]] = "plan.compute_task"() {capability = "matrix_multiply", compute_demand = 100 : i64, group = "compute", id = "fw.qkv", lineage = "fw.qkv", memory_demand = 60 : i64, network_demand = 0 : i64, ops = 100 : i64, phase = "forward", ranks = 8 : i64, read_bytes = 40 : i64, write_bytes = 20 : i64} : () -> !plan.token
  %a = "plan.compute_task"() {id = "fw.qkv", capability = "matrix_multiply", group = "compute", lineage = "fw.qkv", phase = "forward", ops = 100 : i64, read_bytes = 40 : i64, write_bytes = 20 : i64, compute_demand = 100 : i64, memory_demand = 60 : i64, network_demand = 0 : i64, ranks = 8 : i64} : () -> !plan.token
  // CHECK: %[[B:.*]] = "plan.collective_task"(%[[A]]) {capability = "all_reduce", {{.*}}group = "network", id = "fw.ar", {{.*}}message_bytes = 64 : i64
  %b = "plan.collective_task"(%a) {id = "fw.ar", capability = "all_reduce", group = "network", lineage = "fw.ar", phase = "forward", ops = 0 : i64, read_bytes = 0 : i64, write_bytes = 0 : i64, compute_demand = 0 : i64, memory_demand = 0 : i64, network_demand = 64 : i64, ranks = 8 : i64, message_bytes = 64 : i64} : (!plan.token) -> !plan.token
  // CHECK: "plan.compute_task"(%[[A]], %[[B]]) {capability = "vector_elementwise"
  %c = "plan.compute_task"(%a, %b) {id = "fw.gelu", capability = "vector_elementwise", group = "compute", lineage = "fw.qkv", phase = "forward", ops = 100 : i64, read_bytes = 40 : i64, write_bytes = 20 : i64, compute_demand = 100 : i64, memory_demand = 60 : i64, network_demand = 0 : i64, ranks = 8 : i64} : (!plan.token, !plan.token) -> !plan.token
  // CHECK: "plan.collective_task"(%{{.*}}) {capability = "reduce_scatter", {{.*}}mesh_axes = ["tp"]
  %d = "plan.collective_task"(%c) {id = "bw.rs", capability = "reduce_scatter", group = "network", mesh_axes = ["tp"], lineage = "fw.ar", phase = "forward", ops = 0 : i64, read_bytes = 0 : i64, write_bytes = 0 : i64, compute_demand = 0 : i64, memory_demand = 0 : i64, network_demand = 64 : i64, ranks = 8 : i64, message_bytes = 64 : i64} : (!plan.token) -> !plan.token
  %e = "plan.collective_task"(%d) {id = "bw.ag", capability = "all_gather", group = "network", lineage = "fw.ar", phase = "forward", ops = 0 : i64, read_bytes = 0 : i64, write_bytes = 0 : i64, compute_demand = 0 : i64, memory_demand = 0 : i64, network_demand = 64 : i64, ranks = 8 : i64, message_bytes = 64 : i64} : (!plan.token) -> !plan.token
  %f = "plan.collective_task"(%e) {id = "bw.a2a", capability = "all_to_all", group = "network", lineage = "fw.ar", phase = "forward", ops = 0 : i64, read_bytes = 0 : i64, write_bytes = 0 : i64, compute_demand = 0 : i64, memory_demand = 0 : i64, network_demand = 64 : i64, ranks = 8 : i64, message_bytes = 64 : i64} : (!plan.token) -> !plan.token
  %g = "plan.collective_task"(%f) {id = "bw.bc", capability = "broadcast", group = "network", lineage = "fw.ar", phase = "forward", ops = 0 : i64, read_bytes = 0 : i64, write_bytes = 0 : i64, compute_demand = 0 : i64, memory_demand = 0 : i64, network_demand = 64 : i64, ranks = 8 : i64, message_bytes = 64 : i64} : (!plan.token) -> !plan.token
  // CHECK: capability = "point_to_point"
  %h = "plan.collective_task"(%g) {id = "bw.p2p", capability = "point_to_point", group = "network", lineage = "fw.ar", phase = "forward", ops = 0 : i64, read_bytes = 0 : i64, write_bytes = 0 : i64, compute_demand = 0 : i64, memory_demand = 0 : i64, network_demand = 64 : i64, ranks = 8 : i64, message_bytes = 64 : i64} : (!plan.token) -> !plan.token
  return
}
