// The plan of a whole pipelined training step round-trips in the custom
// form and in the generic form: pipeline, chunks (regions ending in
// plan.yield), schedules, task instance attributes, per-stage and per-block
// buffers.
// RUN: blueprint-opt %s | blueprint-opt | FileCheck %s
// RUN: blueprint-opt %s > %t.1.mlir && blueprint-opt %t.1.mlir > %t.2.mlir && diff %t.1.mlir %t.2.mlir
// RUN: blueprint-opt %s --mlir-print-op-generic > %t.generic.mlir
// RUN: FileCheck %s --check-prefix=GENERIC < %t.generic.mlir
// RUN: blueprint-opt %t.generic.mlir | diff %t.1.mlir -

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
// CHECK: plan.pipeline @step schedule = one_f_one_b stages = 1 chunks = 1 microbatches = 1 blocks = 4{{$}}
// GENERIC: "plan.pipeline"() {blocks = 4 : i64, chunks = 1 : i64, microbatches = 1 : i64, schedule = 0 : i32, stages = 1 : i64, sym_name = "step"} : () -> ()
plan.pipeline @step schedule = one_f_one_b stages = 1 chunks = 1 microbatches = 1 blocks = 4
// CHECK: plan.chunk @s0.c0 of @step stage = 0 chunk = 0 first_block = 0 blocks = 4 {
// CHECK-NEXT: ^bb0(%[[IN:.*]]: !plan.token):
// CHECK-NEXT: %[[A:.*]] = plan.compute_task "s0.c0.fw" after(%[[IN]]) matrix_multiply phase = forward ops = 1 read = 2 write = 1 demand(1, 3, 0) ranks = 4 group = compute {lineage = "fw"}
// CHECK-NEXT: %[[B:.*]] = plan.collective_task "s0.c0.ar" after(%[[A]]) all_reduce bytes = 8 phase = forward ops = 0 read = 0 write = 0 demand(0, 0, 8) ranks = 4 group = network {lineage = "ar", mesh_axes = ["tp"]}
// CHECK-NEXT: plan.yield %[[B]] : !plan.token
// CHECK-NEXT: } boundary {
// CHECK-NEXT: ^bb0(%{{.*}}: !plan.token):
// CHECK-NEXT: plan.yield{{$}}
// CHECK-NEXT: }
// GENERIC: "plan.chunk"() ({
// GENERIC: "plan.yield"(%{{.*}}) : (!plan.token) -> ()
// GENERIC-NEXT: }, {
// GENERIC-NEXT: ^bb0(%{{.*}}: !plan.token):
// GENERIC-NEXT: "plan.yield"() : () -> ()
// GENERIC-NEXT: }) {blocks = 4 : i64, chunk = 0 : i64, first_block = 0 : i64, pipeline = @step, stage = 0 : i64, sym_name = "s0.c0"} : () -> ()
plan.chunk @s0.c0 of @step stage = 0 chunk = 0 first_block = 0 blocks = 4 {
^bb0(%in: !plan.token):
  %a = plan.compute_task "s0.c0.fw" after(%in) matrix_multiply phase = forward ops = 1 read = 2 write = 1 demand(1, 3, 0) ranks = 4 group = compute {lineage = "fw"}
  %b = plan.collective_task "s0.c0.ar" after(%a) all_reduce bytes = 8 phase = forward ops = 0 read = 0 write = 0 demand(0, 0, 8) ranks = 4 group = network {lineage = "ar", mesh_axes = ["tp"]}
  plan.yield %b : !plan.token
} boundary {
^bb0(%in: !plan.token):
  plan.yield
}
// CHECK: plan.schedule @step stage = 0 slots = [0, 0, 0, 0, 0, 1]{{$}}
// GENERIC: "plan.schedule"() {pipeline = @step, slots = array<i64: 0, 0, 0, 0, 0, 1>, stage = 0 : i64} : () -> ()
plan.schedule @step stage = 0 slots = [0, 0, 0, 0, 0, 1]
// CHECK: plan.buffer @stage0.weight weight size = 64 align = 64 in local stage = 0 {lineage = "mem.weight"}{{$}}
// GENERIC: "plan.buffer"() {alignment = 64 : i64, contents = 0 : i32, lineage = "mem.weight", memory_space = 0 : i32, size = 64 : i64, stage = 0 : i64, sym_name = "stage0.weight"} : () -> ()
plan.buffer @stage0.weight weight size = 64 align = 64 in local stage = 0 {lineage = "mem.weight"}
// CHECK: plan.buffer @stage0.block0.weight weight size = 16 align = 16 in local shared_by = 2 stage = 0 block 0 {lineage = "mem.weight"}{{$}}
// GENERIC: "plan.buffer"() {alignment = 16 : i64, block = 0 : i64, contents = 0 : i32, lineage = "mem.weight", memory_space = 0 : i32, shared_by = 2 : i64, size = 16 : i64, stage = 0 : i64, sym_name = "stage0.block0.weight"} : () -> ()
plan.buffer @stage0.block0.weight weight size = 16 align = 16 in local shared_by = 2 stage = 0 block 0 {lineage = "mem.weight"}

// CHECK-LABEL: func.func @instances
func.func @instances() {
  // CHECK: plan.compute_task "b3.mb2.fw" vector_elementwise phase = forward ops = 1 read = 2 write = 1 demand(1, 3, 0) ranks = 4 group = compute {block = 3 : i64, chunk = 0 : i64, lineage = "fw", microbatch = 2 : i64, stage = 1 : i64}{{$}}
  // GENERIC: "plan.compute_task"() {block = 3 : i64, capability = 1 : i32, chunk = 0 : i64, compute_demand = 1 : i64, group = 0 : i32, id = "b3.mb2.fw", lineage = "fw", memory_demand = 3 : i64, microbatch = 2 : i64, network_demand = 0 : i64, ops = 1 : i64, phase = 0 : i32, ranks = 4 : i64, read_bytes = 2 : i64, stage = 1 : i64, write_bytes = 1 : i64} : () -> !plan.token
  %a = plan.compute_task "b3.mb2.fw" vector_elementwise phase = forward ops = 1 read = 2 write = 1 demand(1, 3, 0) ranks = 4 group = compute {lineage = "fw", block = 3 : i64, stage = 1 : i64, chunk = 0 : i64, microbatch = 2 : i64}
  return
}
