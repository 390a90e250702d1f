// The two redistribution copies on 4 ranks, with blocks placed by dist.rank.
// reshape: a 4x8 array a[i][j] = 8i + j split by column pairs (rank r holds
// columns 2r, 2r+1) becomes 32 elements split in four: rank r's 8 come from
// every rank, and are row r of the array, 8r .. 8r+7.
// permute: an 8x8 array a[i][j] = 10i + j split by row pairs is transposed
// with axes [1, 0]; rank r gets rows 2r, 2r+1 of the transpose: t[i][j] =
// a[j][i] = 10j + i.
// CHECK: rank 0: result 0 = [0, 1, 2, 3, 4, 5, 6, 7]
// CHECK-NEXT: rank 0: result 1 = [0, 10, 20, 30, 40, 50, 60, 70, 1, 11, 21, 31, 41, 51, 61, 71]
// CHECK-NEXT: rank 1: result 0 = [8, 9, 10, 11, 12, 13, 14, 15]
// CHECK-NEXT: rank 1: result 1 = [2, 12, 22, 32, 42, 52, 62, 72, 3, 13, 23, 33, 43, 53, 63, 73]
// CHECK-NEXT: rank 2: result 0 = [16, 17, 18, 19, 20, 21, 22, 23]
// CHECK-NEXT: rank 2: result 1 = [4, 14, 24, 34, 44, 54, 64, 74, 5, 15, 25, 35, 45, 55, 65, 75]
// CHECK-NEXT: rank 3: result 0 = [24, 25, 26, 27, 28, 29, 30, 31]
// CHECK-NEXT: rank 3: result 1 = [6, 16, 26, 36, 46, 56, 66, 76, 7, 17, 27, 37, 47, 57, 67, 77]
// CHECK-NOT: rank
dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["tp"], shape = [4])
func.func @copies() -> (tensor<8xi64>, tensor<2x8xf64>) {
  %r = dist.rank on @world
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c10 = arith.constant 10 : index
  %c32 = arith.constant 32 : index
  %col = arith.muli %r, %c2 : index
  %block = tensor.generate {
  ^bb0(%i: index, %jl: index):
    %j = arith.addi %col, %jl : index
    %a = arith.muli %i, %c8 : index
    %v = arith.addi %a, %j : index
    %vi = arith.index_cast %v : index to i64
    tensor.yield %vi : i64
  } : tensor<4x2xi64>
  %noff = arith.muli %r, %c8 : index
  %h, %n = dist.copy_reshape %block g_shape %c4, %c8 l_offs %c0, %col to n_g_shape %c32 n_offs %noff n_shape %c8 {team = @world} : tensor<4x2xi64> -> tensor<?xi64>
  dist.wait %h
  %flat = tensor.cast %n : tensor<?xi64> to tensor<8xi64>
  %rows = tensor.generate {
  ^bb0(%il: index, %j: index):
    %i = arith.addi %col, %il : index
    %a = arith.muli %i, %c10 : index
    %v = arith.addi %a, %j : index
    %vi = arith.index_cast %v : index to i64
    %vf = arith.sitofp %vi : i64 to f64
    tensor.yield %vf : f64
  } : tensor<2x8xf64>
  %hp, %t = dist.copy_permute %rows g_shape %c8, %c8 l_offs %col, %c0 n_offs %col, %c0 n_shape %c2, %c8 axes [1, 0] {team = @world} : tensor<2x8xf64> -> tensor<2x8xf64>
  dist.wait %hp
  return %flat, %t : tensor<8xi64>, tensor<2x8xf64>
}
