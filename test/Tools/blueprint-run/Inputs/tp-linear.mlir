// A tensor-parallel linear layer Y = 2 * X W over 4 ranks: rank r holds
// columns 4r..4r+3 of X [4, 16] and rows 4r..4r+3 of W [16, 4], with
// x(i, k) = (7i + 3k) mod 11 - 5 and w(k, j) = (5k + 2j) mod 7 - 3, built
// from dist.rank; an all-reduce sums the partial products. Y was computed
// independently (Python, exact integers):
// CHECK: rank 0: result 0 = [-154, 74, 78, -86, 74, -136, -10, 102, 60, 94, -54, -62, -152, 16, 100, 16]
// CHECK-NEXT: rank 1: result 0 = [-154, 74, 78, -86, 74, -136, -10, 102, 60, 94, -54, -62, -152, 16, 100, 16]
// CHECK-NEXT: rank 2: result 0 = [-154, 74, 78, -86, 74, -136, -10, 102, 60, 94, -54, -62, -152, 16, 100, 16]
// CHECK-NEXT: rank 3: result 0 = [-154, 74, 78, -86, 74, -136, -10, 102, 60, 94, -54, -62, -152, 16, 100, 16]
// CHECK-NOT: rank
dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["tp"], shape = [4])
func.func @tp_linear() -> tensor<4x4xf32> {
  %r = dist.rank on @world
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %c2 = arith.constant 2 : index
  %c11 = arith.constant 11 : index
  %base = arith.muli %r, %c4 : index
  %x = tensor.generate {
  ^bb0(%i: index, %kl: index):
    %k = arith.addi %base, %kl : index
    %a = arith.muli %i, %c7 : index
    %b = arith.muli %k, %c3 : index
    %s = arith.addi %a, %b : index
    %m = arith.remui %s, %c11 : index
    %v = arith.subi %m, %c5 : index
    %vi = arith.index_cast %v : index to i64
    %vf = arith.sitofp %vi : i64 to f32
    tensor.yield %vf : f32
  } : tensor<4x4xf32>
  %w = tensor.generate {
  ^bb0(%kl: index, %j: index):
    %k = arith.addi %base, %kl : index
    %a = arith.muli %k, %c5 : index
    %b = arith.muli %j, %c2 : index
    %s = arith.addi %a, %b : index
    %m = arith.remui %s, %c7 : index
    %v = arith.subi %m, %c3 : index
    %vi = arith.index_cast %v : index to i64
    %vf = arith.sitofp %vi : i64 to f32
    tensor.yield %vf : f32
  } : tensor<4x4xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %p = linalg.matmul ins(%x, %w : tensor<4x4xf32>, tensor<4x4xf32>) outs(%init : tensor<4x4xf32>) -> tensor<4x4xf32>
  %y = dist.all_reduce %p on @world over [0, 1, 2, 3] reduction = sum phase = forward bytes = 64 {id = "ar", lineage = "linear"} : tensor<4x4xf32>
  %two = arith.constant dense<2.0> : tensor<4x4xf32>
  %z = arith.mulf %y, %two : tensor<4x4xf32>
  return %z : tensor<4x4xf32>
}
