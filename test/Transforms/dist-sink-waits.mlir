// RUN: blueprint-opt %s --split-input-file --dist-async --dist-sink-waits | FileCheck %s
// RUN: blueprint-opt %s --split-input-file --dist-async --dist-sink-waits > %t.once && blueprint-opt %t.once --split-input-file --dist-sink-waits | diff %t.once -

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()

// The wait moves past independent work to just before the first use.
// CHECK-LABEL: func.func @overlap
// CHECK: %[[AR:.*]]:2 = "dist.all_reduce_start"
// CHECK-NEXT: %[[LOCAL:.*]] = arith.mulf %arg1, %arg1
// CHECK-NEXT: %[[MORE:.*]] = arith.addf %[[LOCAL]], %[[LOCAL]]
// CHECK-NEXT: "dist.wait"(%[[AR]]#0)
// CHECK-NEXT: arith.addf %[[AR]]#1, %[[MORE]]
func.func @overlap(%x: tensor<8x16xf32>, %w: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %y = "dist.all_reduce"(%x) {id = "ar", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 0, 1, 2, 3>, reduction = "sum", message_bytes = 512 : i64} : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %local = arith.mulf %w, %w : tensor<8x16xf32>
  %more = arith.addf %local, %local : tensor<8x16xf32>
  %z = arith.addf %y, %more : tensor<8x16xf32>
  return %z : tensor<8x16xf32>
}

// A use inside a nested region stops the wait before the region's op.
// CHECK-LABEL: func.func @nested_use
// CHECK: "dist.all_gather_start"
// CHECK-NEXT: arith.constant
// CHECK-NEXT: "dist.wait"
// CHECK-NEXT: scf.if
func.func @nested_use(%x: tensor<2x16xf32>, %c: i1) -> tensor<8x16xf32> {
  %y = "dist.all_gather"(%x) {id = "ag", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 0, 1, 2, 3>, message_bytes = 512 : i64} : (tensor<2x16xf32>) -> tensor<8x16xf32>
  %zero = arith.constant dense<0.0> : tensor<8x16xf32>
  %r = scf.if %c -> tensor<8x16xf32> {
    scf.yield %y : tensor<8x16xf32>
  } else {
    scf.yield %zero : tensor<8x16xf32>
  }
  return %r : tensor<8x16xf32>
}

// With no use after it, the wait stops before the terminator; a wait in a
// nested block never leaves it.
// CHECK-LABEL: func.func @no_use
// CHECK: "dist.broadcast_start"
// CHECK-NEXT: arith.constant 1
// CHECK-NEXT: "dist.wait"
// CHECK-NEXT: return
func.func @no_use(%x: tensor<4xf32>) -> i32 {
  %y = "dist.broadcast"(%x) {id = "bc", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 0, 1>, root = 0 : i64, message_bytes = 16 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  %one = arith.constant 1 : i32
  return %one : i32
}

// CHECK-LABEL: func.func @in_loop
// CHECK: scf.for
// CHECK-NEXT: "dist.p2p_start"
// CHECK-NEXT: arith.addf %arg
// CHECK-NEXT: "dist.wait"
// CHECK-NEXT: scf.yield
func.func @in_loop(%x: tensor<4xf32>, %lb: index, %ub: index, %step: index) -> tensor<4xf32> {
  %r = scf.for %i = %lb to %ub step %step iter_args(%acc = %x) -> tensor<4xf32> {
    %y = "dist.p2p"(%acc) {id = "p", mesh = @tp, phase = "forward", lineage = "l", source = 0 : i64, dest = 1 : i64, message_bytes = 16 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %s = arith.addf %acc, %acc : tensor<4xf32>
    scf.yield %y : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
