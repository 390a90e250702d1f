// RUN: blueprint-opt %s --lower-dist-to-mpi | FileCheck %s
// The result lowers to the LLVM dialect, the mpi ops to MPICH calls.
// RUN: blueprint-opt %s --pass-pipeline='builtin.module(lower-dist-to-mpi, one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map}, convert-bufferization-to-memref, expand-strided-metadata, convert-scf-to-cf, convert-to-llvm, reconcile-unrealized-casts)' | FileCheck %s --check-prefix=LLVM

// An all-reduce over the whole mesh becomes mpi.allreduce on 1-D views of
// the input and a fresh output; the header and mesh go with the last dist op.
// The module names the MPI implementation for the upstream LLVM lowering.
// CHECK: module attributes {dlti.map = #dlti.map<"MPI:Implementation" = "MPICH">}
// CHECK-LABEL: func.func @all_reduce
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf64>)
// CHECK: %[[W:.*]] = mpi.comm_world : !mpi.comm
// CHECK: %[[IN:.*]] = bufferization.to_buffer %[[X]] : tensor<2x3xf64> to memref<2x3xf64>
// CHECK: %[[E:.*]] = tensor.empty() : tensor<2x3xf64>
// CHECK: %[[OUT:.*]] = bufferization.to_buffer %[[E]] : tensor<2x3xf64> to memref<2x3xf64>
// CHECK: %[[S:.*]] = memref.collapse_shape %[[IN]] {{\[\[}}0, 1]] : memref<2x3xf64> into memref<6xf64>
// CHECK: %[[R:.*]] = memref.collapse_shape %[[OUT]] {{\[\[}}0, 1]] : memref<2x3xf64> into memref<6xf64>
// CHECK: mpi.allreduce(%[[S]], %[[R]], MPI_MAX, %[[W]]) : memref<6xf64>, memref<6xf64>
// CHECK: %[[Y:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<2x3xf64> to tensor<2x3xf64>
// CHECK: return %[[Y]]
// CHECK-NOT: dist.
// LLVM: llvm.call @MPI_Allreduce
// LLVM: llvm.call @MPI_Comm_rank
// LLVM: llvm.call @MPI_Send
// LLVM: llvm.call @MPI_Recv
dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @all_reduce(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %y = dist.all_reduce %x on @tp over [0, 1, 2, 3] reduction = max phase = forward bytes = 48 {id = "ar", lineage = "l"} : tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}

// A p2p: the source sends, the destination receives (tag 0).
// CHECK-LABEL: func.func @p2p
// CHECK: %[[W:.*]] = mpi.comm_world : !mpi.comm
// CHECK: %[[IN:.*]] = bufferization.to_buffer %{{.*}} : tensor<4xi32> to memref<4xi32>
// CHECK: %[[OUT:.*]] = bufferization.to_buffer %{{.*}} : tensor<4xi32> to memref<4xi32>
// CHECK: %[[RANK:.*]] = mpi.comm_rank(%[[W]]) : i32
// CHECK-DAG: %[[TAG:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[SRC:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[DST:.*]] = arith.constant 3 : i32
// CHECK: %[[IS_SRC:.*]] = arith.cmpi eq, %[[RANK]], %[[SRC]] : i32
// CHECK: scf.if %[[IS_SRC]] {
// CHECK-NEXT: mpi.send(%[[IN]], %[[TAG]], %[[DST]], %[[W]]) : memref<4xi32>, i32, i32
// CHECK: %[[IS_DST:.*]] = arith.cmpi eq, %[[RANK]], %[[DST]] : i32
// CHECK: scf.if %[[IS_DST]] {
// CHECK-NEXT: mpi.recv(%[[OUT]], %[[TAG]], %[[SRC]], %[[W]]) : memref<4xi32>, i32, i32
// CHECK: bufferization.to_tensor %[[OUT]]
func.func @p2p(%x: tensor<4xi32>) -> tensor<4xi32> {
  %y = dist.p2p %x on @tp from 1 to 3 phase = forward bytes = 16 {id = "p", lineage = "l"} : tensor<4xi32>
  return %y : tensor<4xi32>
}

// The rank from MPI; the number of ranks is the mesh's size (the program
// runs on a world that size).
// CHECK-LABEL: func.func @ranks
// CHECK: %[[W:.*]] = mpi.comm_world : !mpi.comm
// CHECK-NEXT: %[[R:.*]] = mpi.comm_rank(%[[W]]) : i32
// CHECK-NEXT: %[[I:.*]] = arith.index_cast %[[R]] : i32 to index
// CHECK-NEXT: %[[N:.*]] = arith.constant 4 : index
// CHECK-NEXT: return %[[I]], %[[N]]
func.func @ranks() -> (index, index) {
  %r = dist.rank on @tp
  %n = dist.num_ranks on @tp
  return %r, %n : index, index
}
