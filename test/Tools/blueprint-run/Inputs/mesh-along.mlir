// A transfer along a mesh axis (a pipeline stage boundary): on a 2 x 2
// (pp, tp) mesh every rank of stage 0 sends to the rank of stage 1 with its
// tp coordinate (0 -> 2, 1 -> 3); each rank finds its peers at run time
// (_bprt_mesh_peer). Rank r holds 10 r + i; receivers get their sender's,
// the others keep -1s.
// CHECK: rank 0: result 0 = [-1, -1, -1, -1]
// CHECK-NEXT: rank 1: result 0 = [-1, -1, -1, -1]
// CHECK-NEXT: rank 2: result 0 = [0, 1, 2, 3]
// CHECK-NEXT: rank 3: result 0 = [10, 11, 12, 13]
// CHECK-NOT: rank
dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @grid(axes = ["pp", "tp"], shape = [2, 2])
func.func @mesh_along() -> tensor<4xi64> {
  %r = dist.rank on @grid
  %c10 = arith.constant 10 : index
  %c2 = arith.constant 2 : index
  %base = arith.muli %r, %c10 : index
  %x = tensor.generate {
  ^bb0(%i: index):
    %v = arith.addi %base, %i : index
    %vi = arith.index_cast %v : index to i64
    tensor.yield %vi : i64
  } : tensor<4xi64>
  %y = dist.p2p %x on @grid along "pp" from 0 to 1 phase = forward bytes = 32 {id = "send", lineage = "l"} : tensor<4xi64>
  %receiver = arith.cmpi uge, %r, %c2 : index
  %out = scf.if %receiver -> tensor<4xi64> {
    scf.yield %y : tensor<4xi64>
  } else {
    %m = arith.constant dense<-1> : tensor<4xi64>
    scf.yield %m : tensor<4xi64>
  }
  return %out : tensor<4xi64>
}
