// RUN: blueprint-opt %s --split-input-file --dist-async --dist-sink-waits | FileCheck %s
// RUN: blueprint-opt %s --split-input-file --dist-async --dist-sink-waits > %t.once && blueprint-opt %t.once --split-input-file --dist-sink-waits | diff %t.once -

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])

// The wait moves past independent work to just before the first use.
// CHECK-LABEL: func.func @overlap
// CHECK: %[[H:.*]], %[[Y:.*]] = dist.all_reduce_start %arg0 on @tp
// CHECK-NEXT: %[[LOCAL:.*]] = arith.mulf %arg1, %arg1
// CHECK-NEXT: %[[MORE:.*]] = arith.addf %[[LOCAL]], %[[LOCAL]]
// CHECK-NEXT: dist.wait %[[H]]{{$}}
// CHECK-NEXT: arith.addf %[[Y]], %[[MORE]]
func.func @overlap(%x: tensor<8x16xf32>, %w: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %y = dist.all_reduce %x on @tp over [0, 1, 2, 3] reduction = sum phase = forward bytes = 512 {id = "ar", lineage = "l"} : tensor<8x16xf32>
  %local = arith.mulf %w, %w : tensor<8x16xf32>
  %more = arith.addf %local, %local : tensor<8x16xf32>
  %z = arith.addf %y, %more : tensor<8x16xf32>
  return %z : tensor<8x16xf32>
}

// A use inside a nested region stops the wait before the region's op.
// CHECK-LABEL: func.func @nested_use
// CHECK: %[[H:.*]], %{{.*}} = dist.all_gather_start %arg0 on @tp
// CHECK-NEXT: arith.constant
// CHECK-NEXT: dist.wait %[[H]]{{$}}
// CHECK-NEXT: scf.if
func.func @nested_use(%x: tensor<2x16xf32>, %c: i1) -> tensor<8x16xf32> {
  %y = dist.all_gather %x on @tp over [0, 1, 2, 3] phase = forward bytes = 512 {id = "ag", lineage = "l"} : tensor<2x16xf32> -> tensor<8x16xf32>
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
// CHECK: %[[H:.*]], %{{.*}} = dist.broadcast_start %arg0 on @tp
// CHECK-NEXT: arith.constant 1
// CHECK-NEXT: dist.wait %[[H]]{{$}}
// CHECK-NEXT: return
func.func @no_use(%x: tensor<4xf32>) -> i32 {
  %y = dist.broadcast %x on @tp over [0, 1] root = 0 phase = forward bytes = 16 {id = "bc", lineage = "l"} : tensor<4xf32>
  %one = arith.constant 1 : i32
  return %one : i32
}

// CHECK-LABEL: func.func @in_loop
// CHECK: scf.for
// CHECK-NEXT: %[[H:.*]], %[[Y:.*]] = dist.p2p_start %arg
// CHECK-NEXT: arith.addf %arg
// CHECK-NEXT: dist.wait %[[H]]{{$}}
// CHECK-NEXT: scf.yield %[[Y]]
func.func @in_loop(%x: tensor<4xf32>, %lb: index, %ub: index, %step: index) -> tensor<4xf32> {
  %r = scf.for %i = %lb to %ub step %step iter_args(%acc = %x) -> tensor<4xf32> {
    %y = dist.p2p %acc on @tp from 0 to 1 phase = forward bytes = 16 {id = "p", lineage = "l"} : tensor<4xf32>
    %s = arith.addf %acc, %acc : tensor<4xf32>
    scf.yield %y : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
