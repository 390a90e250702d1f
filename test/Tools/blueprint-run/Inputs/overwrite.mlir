// The input of an async all-reduce is overwritten in place (a fill of the
// same tensor) between the start and the wait. The runtime may read the
// input until the wait (the in-process all-reduce reads it there), so the
// lowering must keep bufferization from reusing its buffer: the sum is still
// that of x[i] = 10 r + i over the 4 ranks, 60 + 4i, on every rank.
// CHECK: rank 0: result 0 = [60, 64, 68, 72]
// CHECK-NEXT: rank 0: result 1 = [7, 7, 7, 7]
// CHECK-NEXT: rank 1: result 0 = [60, 64, 68, 72]
// CHECK-NEXT: rank 1: result 1 = [7, 7, 7, 7]
// CHECK-NEXT: rank 2: result 0 = [60, 64, 68, 72]
// CHECK-NEXT: rank 2: result 1 = [7, 7, 7, 7]
// CHECK-NEXT: rank 3: result 0 = [60, 64, 68, 72]
// CHECK-NEXT: rank 3: result 1 = [7, 7, 7, 7]
// CHECK-NOT: rank
dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["tp"], shape = [4])
func.func @overwrite() -> (tensor<4xf32>, tensor<4xf32>) {
  %r = dist.rank on @world
  %c10 = arith.constant 10 : index
  %xs = tensor.generate {
  ^bb0(%i0: index):
    %t = arith.muli %r, %c10 : index
    %v = arith.addi %t, %i0 : index
    %vi = arith.index_cast %v : index to i64
    %vt = arith.sitofp %vi : i64 to f32
    tensor.yield %vt : f32
  } : tensor<4xf32>
  %h0, %ar = dist.all_reduce_start %xs on @world over [0, 1, 2, 3] reduction = sum phase = forward bytes = 16 {id = "ar_overwritten", lineage = "l"} : tensor<4xf32>
  %seven = arith.constant 7.0 : f32
  %z = linalg.fill ins(%seven : f32) outs(%xs : tensor<4xf32>) -> tensor<4xf32>
  dist.wait %h0
  return %ar, %z : tensor<4xf32>, tensor<4xf32>
}
