// The ops of a whole pipelined training step round-trip in the custom form
// and in the generic form: the pipeline, its chunks (the block template and
// the boundary transfers as regions ending in dist.yield), the per-stage
// schedules, task instance attributes and per-block memory facts.
// RUN: blueprint-opt %s | blueprint-opt | FileCheck %s
// RUN: blueprint-opt %s > %t.1.mlir && blueprint-opt %t.1.mlir > %t.2.mlir && diff %t.1.mlir %t.2.mlir
// RUN: blueprint-opt %s --mlir-print-op-generic > %t.generic.mlir
// RUN: FileCheck %s --check-prefix=GENERIC < %t.generic.mlir
// RUN: blueprint-opt %t.generic.mlir | diff %t.1.mlir -

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [2, 2, 2])

// CHECK: dist.pipeline @step on @world along "pp" schedule = one_f_one_b stages = 2 chunks = 1 microbatches = 2 blocks = 4{{$}}
// GENERIC: "dist.pipeline"() {along = "pp", blocks = 4 : i64, chunks = 1 : i64, mesh = @world, microbatches = 2 : i64, schedule = 0 : i32, stages = 2 : i64, sym_name = "step"} : () -> ()
dist.pipeline @step on @world along "pp" schedule = one_f_one_b stages = 2 chunks = 1 microbatches = 2 blocks = 4
// An unrolled pipeline has no chunks or schedules left.
// CHECK: dist.pipeline @unrolled on @world along "pp" schedule = interleaved_one_f_one_b stages = 2 chunks = 2 microbatches = 4 blocks = 8 unrolled{{$}}
// GENERIC: "dist.pipeline"() {along = "pp", blocks = 8 : i64, chunks = 2 : i64, mesh = @world, microbatches = 4 : i64, schedule = 1 : i32, stages = 2 : i64, sym_name = "unrolled", unrolled} : () -> ()
dist.pipeline @unrolled on @world along "pp" schedule = interleaved_one_f_one_b stages = 2 chunks = 2 microbatches = 4 blocks = 8 unrolled

// CHECK: dist.chunk @s0.c0 of @step stage = 0 chunk = 0 first_block = 0 blocks = 2 {
// CHECK-NEXT: ^bb0(%[[IN:.*]]: !dist.token):
// CHECK-NEXT: %[[T:.*]] = dist.compute "attn.ln.fwd" on @world slice [-1, 0, -1] phase = forward vector layer_norm(%[[IN]] : !dist.token) ops = 1 read = 2 write = 1 {lineage = "attn.ln"} : !dist.token
// CHECK-NEXT: %[[G:.*]] = dist.all_reduce %[[T]] on @world slice [-1, 0, -1] axes ["dp"] reduction = sum phase = optimizer bytes = 64 {id = "dp.grad_reduce", lineage = "block"} : !dist.token
// CHECK-NEXT: dist.yield %[[G]] : !dist.token
// CHECK-NEXT: } boundary {
// CHECK-NEXT: ^bb0(%[[BIN:.*]]: !dist.token):
// CHECK-NEXT: %[[S:.*]] = dist.p2p %[[BIN]] on @world slice [-1, 0, -1] along "pp" from 0 to 1 phase = forward bytes = 64 {id = "s0.c0.send", lineage = "block.out"} : !dist.token
// CHECK-NEXT: dist.yield %[[S]] : !dist.token
// CHECK-NEXT: }
// GENERIC: "dist.chunk"() ({
// GENERIC: "dist.yield"(%{{.*}}) : (!dist.token) -> ()
// GENERIC-NEXT: }, {
// GENERIC: "dist.yield"(%{{.*}}) : (!dist.token) -> ()
// GENERIC-NEXT: }) {blocks = 2 : i64, chunk = 0 : i64, first_block = 0 : i64, pipeline = @step, stage = 0 : i64, sym_name = "s0.c0"} : () -> ()
dist.chunk @s0.c0 of @step stage = 0 chunk = 0 first_block = 0 blocks = 2 {
^bb0(%in: !dist.token):
  %t = dist.compute "attn.ln.fwd" on @world slice [-1, 0, -1] phase = forward vector layer_norm(%in : !dist.token) ops = 1 read = 2 write = 1 {lineage = "attn.ln"} : !dist.token
  %g = dist.all_reduce %t on @world slice [-1, 0, -1] axes ["dp"] reduction = sum phase = optimizer bytes = 64 {id = "dp.grad_reduce", lineage = "block"} : !dist.token
  dist.yield %g : !dist.token
} boundary {
^bb0(%in: !dist.token):
  %s = dist.p2p %in on @world slice [-1, 0, -1] along "pp" from 0 to 1 phase = forward bytes = 64 {id = "s0.c0.send", lineage = "block.out"} : !dist.token
  dist.yield %s : !dist.token
}
// A chunk whose boundary has no transfers yields nothing.
// CHECK: dist.chunk @s1.c0 of @step stage = 1 chunk = 0 first_block = 2 blocks = 2 {
// CHECK: } boundary {
// CHECK-NEXT: ^bb0(%{{.*}}: !dist.token):
// CHECK-NEXT: dist.yield{{$}}
// CHECK-NEXT: }
// GENERIC: "dist.yield"() : () -> ()
dist.chunk @s1.c0 of @step stage = 1 chunk = 0 first_block = 2 blocks = 2 {
^bb0(%in: !dist.token):
  %t = dist.compute "s1.c0.mlp.fc1.fwd" on @world slice [-1, 1, -1] phase = forward matrix matmul(%in : !dist.token) ops = 8 read = 4 write = 2 {lineage = "mlp.fc1"} : !dist.token
  dist.yield %t : !dist.token
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}

// CHECK: dist.schedule @step stage = 0 slots = [0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1]{{$}}
// GENERIC: "dist.schedule"() {pipeline = @step, slots = array<i64: 0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1>, stage = 0 : i64} : () -> ()
dist.schedule @step stage = 0 slots = [0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1]
// CHECK: dist.schedule @step stage = 1 slots = [0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 1]{{$}}
dist.schedule @step stage = 1 slots = [0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 1]
// CHECK: dist.memory "mem.weight.s0" on @world slice [-1, 0, -1] block 0 weight = 4096 {lineage = "block"}{{$}}
// GENERIC: "dist.memory"() {block = 0 : i64, bytes = 4096 : i64, id = "mem.weight.s0", kind = 0 : i32, lineage = "block", mesh = @world, slice = array<i64: -1, 0, -1>} : () -> ()
dist.memory "mem.weight.s0" on @world slice [-1, 0, -1] block 0 weight = 4096 {lineage = "block"}

// An unrolled task instance names its block, stage, chunk and microbatch.
// CHECK-LABEL: func.func @instances
func.func @instances(%t: !dist.token) {
  // CHECK: dist.compute "b3.mb2.attn.ln.fwd" on @world slice [-1, 1, -1] phase = forward vector layer_norm(%{{.*}} : !dist.token) ops = 1 read = 2 write = 1 {block = 3 : i64, chunk = 1 : i64, lineage = "attn.ln", microbatch = 2 : i64, stage = 1 : i64} : !dist.token
  // GENERIC: "dist.compute"(%{{.*}}) {block = 3 : i64, chunk = 1 : i64, engine = 1 : i32, id = "b3.mb2.attn.ln.fwd", lineage = "attn.ln", mesh = @world, microbatch = 2 : i64, ops = 1 : i64, phase = 0 : i32, primitive = 2 : i32, read_bytes = 2 : i64, slice = array<i64: -1, 1, -1>, stage = 1 : i64, write_bytes = 1 : i64} : (!dist.token) -> !dist.token
  %c = dist.compute "b3.mb2.attn.ln.fwd" on @world slice [-1, 1, -1] phase = forward vector layer_norm(%t : !dist.token) ops = 1 read = 2 write = 1 {lineage = "attn.ln", block = 3 : i64, stage = 1 : i64, chunk = 1 : i64, microbatch = 2 : i64} : !dist.token
  // CHECK: dist.p2p %{{.*}} on @world slice [-1, -1, 0] along "pp" from 1 to 0 phase = activation_gradient bytes = 64 {chunk = 1 : i64, id = "mb2.s1.c1.recv", lineage = "block.in", microbatch = 2 : i64, stage = 1 : i64} : !dist.token
  %p = dist.p2p %c on @world slice [-1, -1, 0] along "pp" from 1 to 0 phase = activation_gradient bytes = 64 {id = "mb2.s1.c1.recv", lineage = "block.in", stage = 1 : i64, chunk = 1 : i64, microbatch = 2 : i64} : !dist.token
  return
}
