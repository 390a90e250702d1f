// RUN: blueprint-opt %s --split-input-file --dist-canonicalize | FileCheck %s
// A fixpoint: a second run changes nothing.
// RUN: blueprint-opt %s --split-input-file --dist-canonicalize > %t.once && blueprint-opt %t.once --split-input-file --dist-canonicalize | diff %t.once -

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
// Constant new local shape: the result becomes static and a cast restores
// the original type for the existing users.
// CHECK-LABEL: func.func @refine_reshape
// CHECK-DAG: %[[C12:.*]] = arith.constant 12 : index
// CHECK: %[[COPY:.*]]:2 = "dist.copy_reshape"(%arg0, %arg1, %arg2, %arg3, %arg4, %{{.*}}, %{{.*}}, %[[C12]]) {operandSegmentSizes = array<i32: 1, 2, 2, 1, 1, 1>, team = 22 : i64} : (tensor<?x?xi64>, index, index, index, index, index, index, index) -> (!dist.async_handle, tensor<12xi64>)
// CHECK-NEXT: "dist.wait"(%[[COPY]]#0)
// CHECK-NEXT: %[[CAST:.*]] = tensor.cast %[[COPY]]#1 : tensor<12xi64> to tensor<?xi64>
// CHECK-NEXT: return %[[CAST]]
func.func @refine_reshape(%l: tensor<?x?xi64>, %g0: index, %g1: index, %o0: index, %o1: index) -> tensor<?xi64> {
  %ng = arith.constant 48 : index
  %no = arith.constant 0 : index
  %ns = arith.constant 12 : index
  %h, %out = "dist.copy_reshape"(%l, %g0, %g1, %o0, %o1, %ng, %no, %ns) {team = 22 : i64, operandSegmentSizes = array<i32: 1, 2, 2, 1, 1, 1>} : (tensor<?x?xi64>, index, index, index, index, index, index, index) -> (!dist.async_handle, tensor<?xi64>)
  "dist.wait"(%h) : (!dist.async_handle) -> ()
  return %out : tensor<?xi64>
}

// Only the dims with constant sizes are refined.
// CHECK-LABEL: func.func @refine_permute_partially
// CHECK: "dist.copy_permute"
// CHECK-SAME: -> (!dist.async_handle, tensor<6x?xf32>)
// CHECK-NEXT: "dist.wait"
// CHECK-NEXT: tensor.cast %{{.*}}#1 : tensor<6x?xf32> to tensor<?x?xf32>
func.func @refine_permute_partially(%l: tensor<?x?xf32>, %g0: index, %g1: index, %o0: index, %o1: index, %ns1: index) -> tensor<?x?xf32> {
  %ns0 = arith.constant 6 : index
  %h, %out = "dist.copy_permute"(%l, %g0, %g1, %o0, %o1, %o1, %o0, %ns0, %ns1) {team = 22 : i64, axes = array<i64: 1, 0>, operandSegmentSizes = array<i32: 1, 2, 2, 2, 2>} : (tensor<?x?xf32>, index, index, index, index, index, index, index, index) -> (!dist.async_handle, tensor<?x?xf32>)
  "dist.wait"(%h) : (!dist.async_handle) -> ()
  return %out : tensor<?x?xf32>
}

// A producer cast that only erases static sizes folds into the copy.
// CHECK-LABEL: func.func @fold_cast
// CHECK-NOT: tensor.cast %arg0
// CHECK: "dist.copy_permute"(%arg0,
// CHECK-SAME: (tensor<4x6xi64>, index
func.func @fold_cast(%s: tensor<4x6xi64>, %i: index) -> tensor<?x?xi64> {
  %l = tensor.cast %s : tensor<4x6xi64> to tensor<?x?xi64>
  %h, %out = "dist.copy_permute"(%l, %i, %i, %i, %i, %i, %i, %i, %i) {team = 22 : i64, axes = array<i64: 1, 0>, operandSegmentSizes = array<i32: 1, 2, 2, 2, 2>} : (tensor<?x?xi64>, index, index, index, index, index, index, index, index) -> (!dist.async_handle, tensor<?x?xi64>)
  "dist.wait"(%h) : (!dist.async_handle) -> ()
  return %out : tensor<?x?xi64>
}

// A cast that adds static information is not folded (it is a check).
// CHECK-LABEL: func.func @keep_refining_cast
// CHECK: %[[C:.*]] = tensor.cast %arg0 : tensor<?x?xi64> to tensor<4x6xi64>
// CHECK: "dist.copy_reshape"(%[[C]],
func.func @keep_refining_cast(%s: tensor<?x?xi64>, %i: index) -> tensor<?xi64> {
  %l = tensor.cast %s : tensor<?x?xi64> to tensor<4x6xi64>
  %h, %out = "dist.copy_reshape"(%l, %i, %i, %i, %i, %i, %i, %i) {team = 22 : i64, operandSegmentSizes = array<i32: 1, 2, 2, 1, 1, 1>} : (tensor<4x6xi64>, index, index, index, index, index, index, index) -> (!dist.async_handle, tensor<?xi64>)
  "dist.wait"(%h) : (!dist.async_handle) -> ()
  return %out : tensor<?xi64>
}
