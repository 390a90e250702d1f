// Collectives whose groups are named by mesh axes (issue 26): on a 2 x 2
// (dp, tp) mesh rank r is (r / 2, r % 2); each rank builds its group from
// its coordinates at run time (_bprt_mesh_group; on MPI a communicator per
// group). Rank r holds x = 10 r + i.
//  - all-reduce along tp: {0, 1} sum to 10 + 2i, {2, 3} to 50 + 2i;
//  - all-gather of x[0:2] along dp: {0, 2} gather [0, 1, 20, 21],
//    {1, 3} gather [10, 11, 30, 31];
//  - reduce-scatter along dp and tp (all four ranks): the sum 60 + 4i,
//    element r on rank r.
// CHECK: rank 0: result 0 = [10, 12, 14, 16]
// CHECK-NEXT: rank 0: result 1 = [0, 1, 20, 21]
// CHECK-NEXT: rank 0: result 2 = [60]
// CHECK-NEXT: rank 1: result 0 = [10, 12, 14, 16]
// CHECK-NEXT: rank 1: result 1 = [10, 11, 30, 31]
// CHECK-NEXT: rank 1: result 2 = [64]
// CHECK-NEXT: rank 2: result 0 = [50, 52, 54, 56]
// CHECK-NEXT: rank 2: result 1 = [0, 1, 20, 21]
// CHECK-NEXT: rank 2: result 2 = [68]
// CHECK-NEXT: rank 3: result 0 = [50, 52, 54, 56]
// CHECK-NEXT: rank 3: result 1 = [10, 11, 30, 31]
// CHECK-NEXT: rank 3: result 2 = [72]
// CHECK-NOT: rank
dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @grid(axes = ["dp", "tp"], shape = [2, 2])
func.func @mesh_axes() -> (tensor<4xi64>, tensor<4xi64>, tensor<1xi64>) {
  %r = dist.rank on @grid
  %c10 = arith.constant 10 : index
  %base = arith.muli %r, %c10 : index
  %x = tensor.generate {
  ^bb0(%i: index):
    %v = arith.addi %base, %i : index
    %vi = arith.index_cast %v : index to i64
    tensor.yield %vi : i64
  } : tensor<4xi64>
  %y = tensor.extract_slice %x[0] [2] [1] : tensor<4xi64> to tensor<2xi64>
  %a = dist.all_reduce %x on @grid axes ["tp"] reduction = sum phase = forward bytes = 32 {id = "ar_tp", lineage = "l"} : tensor<4xi64>
  %g = dist.all_gather %y on @grid axes ["dp"] phase = forward bytes = 32 {id = "ag_dp", lineage = "l"} : tensor<2xi64> -> tensor<4xi64>
  %s = dist.reduce_scatter %x on @grid axes ["dp", "tp"] reduction = sum phase = forward bytes = 32 {id = "rs_all", lineage = "l"} : tensor<4xi64> -> tensor<1xi64>
  return %a, %g, %s : tensor<4xi64>, tensor<4xi64>, tensor<1xi64>
}
