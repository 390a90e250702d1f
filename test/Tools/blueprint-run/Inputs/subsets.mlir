// Collectives over participant subsets, in a given order: ranks 3 and 1
// all-reduce (sum of 10r + i: 40 + 2i) while ranks 2 and 0 all-gather in
// the order [2, 0] (rank 2's block first); the others keep their input or
// -1s. On MPI each list gets its own communicator (MPI_Comm_create_group).
// CHECK: rank 0: result 0 = [0, 1, 2, 3]
// CHECK-NEXT: rank 0: result 1 = [20, 21, 0, 1]
// CHECK-NEXT: rank 1: result 0 = [40, 42, 44, 46]
// CHECK-NEXT: rank 1: result 1 = [-1, -1, -1, -1]
// CHECK-NEXT: rank 2: result 0 = [20, 21, 22, 23]
// CHECK-NEXT: rank 2: result 1 = [20, 21, 0, 1]
// CHECK-NEXT: rank 3: result 0 = [40, 42, 44, 46]
// CHECK-NEXT: rank 3: result 1 = [-1, -1, -1, -1]
// CHECK-NOT: rank
dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["tp"], shape = [4])
func.func @subsets() -> (tensor<4xi64>, tensor<4xi64>) {
  %r = dist.rank on @world
  %c2 = arith.constant 2 : index
  %c10 = arith.constant 10 : index
  %base = arith.muli %r, %c10 : index
  %x = tensor.generate {
  ^bb0(%i: index):
    %v = arith.addi %base, %i : index
    %vi = arith.index_cast %v : index to i64
    tensor.yield %vi : i64
  } : tensor<4xi64>
  %y = tensor.extract_slice %x[0] [2] [1] : tensor<4xi64> to tensor<2xi64>
  %parity = arith.remui %r, %c2 : index
  %zero = arith.constant 0 : index
  %even = arith.cmpi eq, %parity, %zero : index
  %a = scf.if %even -> tensor<4xi64> {
    scf.yield %x : tensor<4xi64>
  } else {
    %s = dist.all_reduce %x on @world over [3, 1] reduction = sum phase = forward bytes = 32 {id = "ar_odd", lineage = "l"} : tensor<4xi64>
    scf.yield %s : tensor<4xi64>
  }
  %g = scf.if %even -> tensor<4xi64> {
    %t = dist.all_gather %y on @world over [2, 0] phase = forward bytes = 16 {id = "ag_even", lineage = "l"} : tensor<2xi64> -> tensor<4xi64>
    scf.yield %t : tensor<4xi64>
  } else {
    %m = arith.constant dense<-1> : tensor<4xi64>
    scf.yield %m : tensor<4xi64>
  }
  return %a, %g : tensor<4xi64>, tensor<4xi64>
}
