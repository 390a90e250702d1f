// What lower-dist-to-mpi covers, run through MLIR's mpi dialect under
// `mpirun -np 4` (blueprint-run --lower-to-mpi). Rank r holds x[i] = 10 r + i.
// 0: all-reduce sum f64 [2, 3]: 60 + 4i.  1: all-reduce max i32 of 10r - i:
// rank 3's.  2: p2p f32 from 1 to 3 (rank 3 shows what it received, the
// others their input).  3: [rank, number of ranks].
// CHECK: rank 0: result 0 = [60, 64, 68, 72, 76, 80]
// CHECK-NEXT: rank 0: result 1 = [30, 29, 28, 27]
// CHECK-NEXT: rank 0: result 2 = [0, 1]
// CHECK-NEXT: rank 0: result 3 = [0, 4]
// CHECK-NEXT: rank 1: result 0 = [60, 64, 68, 72, 76, 80]
// CHECK-NEXT: rank 1: result 1 = [30, 29, 28, 27]
// CHECK-NEXT: rank 1: result 2 = [10, 11]
// CHECK-NEXT: rank 1: result 3 = [1, 4]
// CHECK-NEXT: rank 2: result 0 = [60, 64, 68, 72, 76, 80]
// CHECK-NEXT: rank 2: result 1 = [30, 29, 28, 27]
// CHECK-NEXT: rank 2: result 2 = [20, 21]
// CHECK-NEXT: rank 2: result 3 = [2, 4]
// CHECK-NEXT: rank 3: result 0 = [60, 64, 68, 72, 76, 80]
// CHECK-NEXT: rank 3: result 1 = [30, 29, 28, 27]
// CHECK-NEXT: rank 3: result 2 = [10, 11]
// CHECK-NEXT: rank 3: result 3 = [3, 4]
// CHECK-NOT: rank
dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["tp"], shape = [4])
func.func @mpi_dialect() -> (tensor<2x3xf64>, tensor<4xi32>, tensor<2xf32>, tensor<2xindex>) {
  %r = dist.rank on @world
  %n = dist.num_ranks on @world
  %c3 = arith.constant 3 : index
  %c10 = arith.constant 10 : index
  %base = arith.muli %r, %c10 : index
  %xd = tensor.generate {
  ^bb0(%i: index, %j: index):
    %a = arith.muli %i, %c3 : index
    %l = arith.addi %a, %j : index
    %v = arith.addi %base, %l : index
    %vi = arith.index_cast %v : index to i64
    %vf = arith.sitofp %vi : i64 to f64
    tensor.yield %vf : f64
  } : tensor<2x3xf64>
  %xi = tensor.generate {
  ^bb0(%i: index):
    %v = arith.subi %base, %i : index
    %vi = arith.index_cast %v : index to i32
    tensor.yield %vi : i32
  } : tensor<4xi32>
  %xf = tensor.generate {
  ^bb0(%i: index):
    %v = arith.addi %base, %i : index
    %vi = arith.index_cast %v : index to i64
    %vf = arith.sitofp %vi : i64 to f32
    tensor.yield %vf : f32
  } : tensor<2xf32>
  %s = dist.all_reduce %xd on @world over [0, 1, 2, 3] reduction = sum phase = forward bytes = 48 {id = "sum", lineage = "l"} : tensor<2x3xf64>
  %m = dist.all_reduce %xi on @world over [0, 1, 2, 3] reduction = max phase = forward bytes = 16 {id = "max", lineage = "l"} : tensor<4xi32>
  %p = dist.p2p %xf on @world from 1 to 3 phase = forward bytes = 8 {id = "p2p", lineage = "l"} : tensor<2xf32>
  %is3 = arith.cmpi eq, %r, %c3 : index
  %q = arith.select %is3, %p, %xf : tensor<2xf32>
  %rn = tensor.from_elements %r, %n : tensor<2xindex>
  return %s, %m, %q, %rn : tensor<2x3xf64>, tensor<4xi32>, tensor<2xf32>, tensor<2xindex>
}
