// RUN: blueprint-opt %s --split-input-file --dist-canonicalize | FileCheck %s
// A fixpoint: a second run changes nothing.
// RUN: blueprint-opt %s --split-input-file --dist-canonicalize > %t.once && blueprint-opt %t.once --split-input-file --dist-canonicalize | diff %t.once -

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
// Constant new local shape: the result becomes static and a cast restores
// the original type for the existing users.
// CHECK-LABEL: func.func @refine_reshape
// CHECK-DAG: %[[C48:.*]] = arith.constant 48 : index
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C12:.*]] = arith.constant 12 : index
// CHECK: %[[H:.*]], %[[OUT:.*]] = dist.copy_reshape %arg0 g_shape %arg1, %arg2 l_offs %arg3, %arg4 to n_g_shape %[[C48]] n_offs %[[C0]] n_shape %[[C12]] {team = 22 : i64} : tensor<?x?xi64> -> tensor<12xi64>
// CHECK-NEXT: dist.wait %[[H]]{{$}}
// CHECK-NEXT: %[[CAST:.*]] = tensor.cast %[[OUT]] : tensor<12xi64> to tensor<?xi64>
// CHECK-NEXT: return %[[CAST]]
func.func @refine_reshape(%l: tensor<?x?xi64>, %g0: index, %g1: index, %o0: index, %o1: index) -> tensor<?xi64> {
  %ng = arith.constant 48 : index
  %no = arith.constant 0 : index
  %ns = arith.constant 12 : index
  %h, %out = dist.copy_reshape %l g_shape %g0, %g1 l_offs %o0, %o1 to n_g_shape %ng n_offs %no n_shape %ns {team = 22 : i64} : tensor<?x?xi64> -> tensor<?xi64>
  dist.wait %h
  return %out : tensor<?xi64>
}

// Only the dims with constant sizes are refined.
// CHECK-LABEL: func.func @refine_permute_partially
// CHECK: %[[C6:.*]] = arith.constant 6 : index
// CHECK: %[[H:.*]], %[[OUT:.*]] = dist.copy_permute %arg0 g_shape %arg1, %arg2 l_offs %arg3, %arg4 n_offs %arg4, %arg3 n_shape %[[C6]], %arg5 axes [1, 0] {team = 22 : i64} : tensor<?x?xf32> -> tensor<6x?xf32>
// CHECK-NEXT: dist.wait %[[H]]{{$}}
// CHECK-NEXT: tensor.cast %[[OUT]] : tensor<6x?xf32> to tensor<?x?xf32>
func.func @refine_permute_partially(%l: tensor<?x?xf32>, %g0: index, %g1: index, %o0: index, %o1: index, %ns1: index) -> tensor<?x?xf32> {
  %ns0 = arith.constant 6 : index
  %h, %out = dist.copy_permute %l g_shape %g0, %g1 l_offs %o0, %o1 n_offs %o1, %o0 n_shape %ns0, %ns1 axes [1, 0] {team = 22 : i64} : tensor<?x?xf32> -> tensor<?x?xf32>
  dist.wait %h
  return %out : tensor<?x?xf32>
}

// A producer cast that only erases static sizes folds into the copy.
// CHECK-LABEL: func.func @fold_cast
// CHECK-NOT: tensor.cast %arg0
// CHECK: dist.copy_permute %arg0 g_shape
// CHECK-SAME: : tensor<4x6xi64> -> tensor<?x?xi64>
func.func @fold_cast(%s: tensor<4x6xi64>, %i: index) -> tensor<?x?xi64> {
  %l = tensor.cast %s : tensor<4x6xi64> to tensor<?x?xi64>
  %h, %out = dist.copy_permute %l g_shape %i, %i l_offs %i, %i n_offs %i, %i n_shape %i, %i axes [1, 0] {team = 22 : i64} : tensor<?x?xi64> -> tensor<?x?xi64>
  dist.wait %h
  return %out : tensor<?x?xi64>
}

// A cast that adds static information is not folded (it is a check).
// CHECK-LABEL: func.func @keep_refining_cast
// CHECK: %[[C:.*]] = tensor.cast %arg0 : tensor<?x?xi64> to tensor<4x6xi64>
// CHECK: dist.copy_reshape %[[C]] g_shape
// CHECK-SAME: : tensor<4x6xi64> -> tensor<?xi64>
func.func @keep_refining_cast(%s: tensor<?x?xi64>, %i: index) -> tensor<?xi64> {
  %l = tensor.cast %s : tensor<?x?xi64> to tensor<4x6xi64>
  %h, %out = dist.copy_reshape %l g_shape %i, %i l_offs %i, %i to n_g_shape %i n_offs %i n_shape %i {team = 22 : i64} : tensor<4x6xi64> -> tensor<?xi64>
  dist.wait %h
  return %out : tensor<?xi64>
}
