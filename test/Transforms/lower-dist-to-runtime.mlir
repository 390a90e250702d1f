// RUN: blueprint-opt %s --split-input-file --lower-dist-to-runtime | FileCheck %s
// Running the lowering twice changes nothing (declarations are not repeated).
// RUN: blueprint-opt %s --split-input-file --lower-dist-to-runtime > %t.once && blueprint-opt %t.once --split-input-file --lower-dist-to-runtime | diff %t.once -
// The lowered IR bufferizes and lowers to the LLVM dialect.
// RUN: blueprint-opt %s --split-input-file --pass-pipeline='builtin.module(lower-dist-to-runtime, one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map}, buffer-results-to-out-params, ownership-based-buffer-deallocation, canonicalize, buffer-deallocation-simplification, bufferization-lower-deallocations, expand-strided-metadata, lower-affine, convert-scf-to-cf, finalize-memref-to-llvm, convert-arith-to-llvm, convert-index-to-llvm, convert-func-to-llvm, convert-cf-to-llvm, reconcile-unrealized-casts)' | FileCheck %s --check-prefix=LLVM

// Only the functions used are declared, once, at the top of the module.
// CHECK-LABEL: module {
// CHECK-NEXT: func.func private @_bprt_copy_permute_i64(i64, memref<*xi64>, memref<*xindex>, memref<*xindex>, memref<*xindex>, memref<*xindex>, memref<*xi64>, memref<*xi64>) -> i64
// CHECK-NEXT: func.func private @_bprt_copy_reshape_i64(i64, memref<*xi64>, memref<*xindex>, memref<*xindex>, memref<*xindex>, memref<*xindex>, memref<*xindex>, memref<*xi64>) -> i64
// CHECK-NEXT: func.func private @_bprt_op(memref<*xi8>) -> i64
// CHECK-NEXT: func.func private @_bprt_wait(i64) -> i64
// CHECK-NOT: func.func private
// CHECK-NOT: dist.

// A reshape of a 2-D distributed array to 1-D followed by a wait: the empty
// output, the typed reshape call and the wait call.
// CHECK-LABEL: func.func @reshape_2d_to_1d
// CHECK-SAME: (%[[L:.*]]: tensor<?x?xi64>, %[[G0:.*]]: index, %[[G1:.*]]: index, %[[O0:.*]]: index, %[[O1:.*]]: index, %[[NG0:.*]]: index, %[[NO0:.*]]: index, %[[NS0:.*]]: index)
// The runtime only reads the input (read_only: bufferization need not copy it).
// CHECK: %[[IN:.*]] = bufferization.to_buffer %[[L]] read_only : tensor<?x?xi64> to memref<?x?xi64>
// CHECK: %[[INU:.*]] = memref.cast %[[IN]] : memref<?x?xi64> to memref<*xi64>
// CHECK: %[[EMPTY:.*]] = tensor.empty(%[[NS0]]) : tensor<?xi64>
// CHECK: %[[OUT:.*]] = bufferization.to_buffer %[[EMPTY]] : tensor<?xi64> to memref<?xi64>
// CHECK: %[[OUTU:.*]] = memref.cast %[[OUT]] : memref<?xi64> to memref<*xi64>
// The shape and offset lists live on the stack for the call only; the op
// is announced first (an op without `id` is named by its op name), so a
// runtime error can name it.
// CHECK: %[[SCOPE:.*]] = memref.alloca_scope -> (i64) {
// CHECK-NEXT: %[[NAME:.*]] = memref.get_global @__bprt_op_0 : memref<{{[0-9]+}}xi8>
// CHECK-NEXT: %[[NAMEU:.*]] = memref.cast %[[NAME]] : memref<{{[0-9]+}}xi8> to memref<*xi8>
// CHECK-NEXT: %{{.*}} = func.call @_bprt_op(%[[NAMEU]]) : (memref<*xi8>) -> i64
// CHECK: %[[TEAM:.*]] = arith.constant 22 : i64
// CHECK: %[[GS:.*]] = memref.alloca() : memref<2xindex>
// CHECK: memref.store %[[G0]], %[[GS]]
// CHECK: memref.store %[[G1]], %[[GS]]
// CHECK: %[[H:.*]] = func.call @_bprt_copy_reshape_i64(%[[TEAM]], %[[INU]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[OUTU]])
// CHECK-NEXT: memref.alloca_scope.return %[[H]] : i64
// CHECK-NEXT: }
// CHECK-NEXT: %{{.*}} = call @_bprt_wait(%[[SCOPE]]) : (i64) -> i64
// The input is read again after the wait: the runtime may read its buffer
// until then, so bufferization must not write it in place in between.
// CHECK-NEXT: %{{.*}} = bufferization.to_buffer %[[L]] read_only : tensor<?x?xi64> to memref<?x?xi64>
// CHECK-NEXT: %[[R:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<?xi64> to tensor<?xi64>
// CHECK-NEXT: return %[[R]]
dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
func.func @reshape_2d_to_1d(%local: tensor<?x?xi64>, %g0: index, %g1: index, %o0: index, %o1: index, %ng0: index, %no0: index, %ns0: index) -> tensor<?xi64> {
  %h, %out = dist.copy_reshape %local g_shape %g0, %g1 l_offs %o0, %o1 to n_g_shape %ng0 n_offs %no0 n_shape %ns0 {team = 22 : i64} : tensor<?x?xi64> -> tensor<?xi64>
  dist.wait %h
  return %out : tensor<?xi64>
}

// A permutation with axes [1, 0]; a static result type gives a
// tensor.empty without operands (the reference builds an invalid one).
// CHECK-LABEL: func.func @permute_static
// CHECK: %[[EMPTY:.*]] = tensor.empty() : tensor<6x2xi64>
// CHECK: %[[SCOPE:.*]] = memref.alloca_scope
// CHECK: %[[AXES:.*]] = memref.alloca() : memref<2xi64>
// CHECK: func.call @_bprt_copy_permute_i64(
// CHECK: call @_bprt_wait(%[[SCOPE]])
// CHECK-NEXT: bufferization.to_buffer %{{.*}} read_only : tensor<2x6xi64> to memref<2x6xi64>
// CHECK-NEXT: bufferization.to_tensor %{{.*}} restrict writable : memref<6x2xi64> to tensor<6x2xi64>
func.func @permute_static(%local: tensor<2x6xi64>, %g0: index, %g1: index, %o0: index, %o1: index) -> tensor<6x2xi64> {
  %h, %out = dist.copy_permute %local g_shape %g0, %g1 l_offs %o0, %o1 n_offs %o1, %o0 n_shape %g1, %g0 axes [1, 0] {team = 22 : i64} : tensor<2x6xi64> -> tensor<6x2xi64>
  dist.wait %h
  return %out : tensor<6x2xi64>
}

// LLVM: llvm.func @_bprt_copy_reshape_i64(i64, i64, !llvm.ptr, i64, !llvm.ptr,
// LLVM: llvm.call @_bprt_copy_reshape_i64
// LLVM: llvm.call @_bprt_wait

// -----

// Collectives after dist-async: typed calls with participants, and the
// header and mesh go once nothing of the dist program is left.
// CHECK-LABEL: module {
// CHECK-NEXT: func.func private @_bprt_all_gather_bf16(i64, memref<*xi64>, memref<*xbf16>, memref<*xbf16>, i64) -> i64
// CHECK-NEXT: func.func private @_bprt_all_reduce_f32(i64, memref<*xi64>, memref<*xf32>, memref<*xf32>, i32) -> i64
// CHECK-NEXT: func.func private @_bprt_op(memref<*xi8>) -> i64
// CHECK-NEXT: func.func private @_bprt_reduce_scatter_f16(i64, memref<*xi64>, memref<*xf16>, memref<*xf16>, i32, i64) -> i64
// CHECK-NEXT: func.func private @_bprt_send_recv_i1(i64, memref<*xi1>, memref<*xi1>, i64, i64) -> i64
// CHECK-NEXT: func.func private @_bprt_wait(i64) -> i64
// CHECK-NOT: dist.
dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
// CHECK-LABEL: func.func @collectives
func.func @collectives(%x: tensor<8x16xf32>, %h16: tensor<8x?xf16>, %b: tensor<?x4xbf16>, %flags: tensor<4xi1>) -> (tensor<8x16xf32>, tensor<2x?xf16>, tensor<?x4xbf16>, tensor<4xi1>) {
  // CHECK: %[[P:.*]] = memref.alloca() : memref<4xi64>
  // CHECK: %[[SUM:.*]] = arith.constant 0 : i32
  // CHECK: func.call @_bprt_all_reduce_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[SUM]])
  %h0, %y = dist.all_reduce_start %x on @tp over [0, 1, 2, 3] reduction = sum phase = forward bytes = 512 {id = "ar", lineage = "l"} : tensor<8x16xf32>
  // The dynamic dim of the result is read from the input.
  // CHECK: %[[D1:.*]] = tensor.dim %arg1, %{{.*}} : tensor<8x?xf16>
  // CHECK: tensor.empty(%[[D1]]) : tensor<2x?xf16>
  // CHECK: %[[MAX:.*]] = arith.constant 1 : i32
  // CHECK: func.call @_bprt_reduce_scatter_f16(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[MAX]], %{{.*}})
  %h1, %r = dist.reduce_scatter_start %h16 on @tp over [0, 1, 2, 3] reduction = max phase = forward bytes = 512 {id = "rs", lineage = "l"} : tensor<8x?xf16> -> tensor<2x?xf16>
  // Along the gathered axis the size is scaled by the participant count.
  // CHECK: %[[D0:.*]] = tensor.dim %arg2
  // CHECK: %[[N:.*]] = arith.constant 4 : index
  // CHECK: %[[G:.*]] = arith.muli %[[D0]], %[[N]] : index
  // CHECK: tensor.empty(%[[G]]) : tensor<?x4xbf16>
  %h2, %g = dist.all_gather_start %b on @tp over [0, 1, 2, 3] phase = forward bytes = 64 {id = "ag", lineage = "l"} : tensor<?x4xbf16> -> tensor<?x4xbf16>
  // CHECK: call @_bprt_send_recv_i1
  %h3, %f = dist.p2p_start %flags on @tp from 0 to 3 phase = forward bytes = 4 {id = "p", lineage = "l"} : tensor<4xi1>
  dist.wait %h0
  dist.wait %h1
  dist.wait %h2
  dist.wait %h3
  return %y, %r, %g, %f : tensor<8x16xf32>, tensor<2x?xf16>, tensor<?x4xbf16>, tensor<4xi1>
}

// -----

// Rank queries become runtime calls on the mesh's team (its position among
// the module's meshes), cast to index; the op names are constant globals,
// one per op: `'id' at file:line:col`.
// CHECK-LABEL: module {
// CHECK-NEXT: func.func private @_bprt_all_reduce_i64(i64, memref<*xi64>, memref<*xi64>, memref<*xi64>, i32) -> i64
// CHECK-NEXT: func.func private @_bprt_nprocs(i64) -> i64
// CHECK-NEXT: func.func private @_bprt_op(memref<*xi8>) -> i64
// CHECK-NEXT: func.func private @_bprt_prank(i64) -> i64
// CHECK-NEXT: func.func private @_bprt_wait(i64) -> i64
// CHECK-LABEL: func.func @ranks
// CHECK: %[[TEAM:.*]] = arith.constant 1 : i64
// CHECK-NEXT: %[[R:.*]] = call @_bprt_prank(%[[TEAM]]) : (i64) -> i64
// CHECK-NEXT: %[[RI:.*]] = arith.index_cast %[[R]] : i64 to index
// CHECK: %[[N:.*]] = call @_bprt_nprocs(%{{.*}}) : (i64) -> i64
// CHECK-NEXT: %[[NI:.*]] = arith.index_cast %[[N]] : i64 to index
// CHECK: memref.get_global @__bprt_op_0
// CHECK: call @_bprt_all_reduce_i64
// CHECK: memref.get_global @__bprt_op_1
// CHECK: call @_bprt_all_reduce_i64
// CHECK: return %[[RI]], %[[NI]]
// 'ar' at ...: the quote, a, r, quote, space, a, t, space.
// CHECK: memref.global "private" constant @__bprt_op_0 : memref<{{[0-9]+}}xi8> = dense<[39, 97, 114, 39, 32, 97, 116, 32,
// CHECK-NEXT: memref.global "private" constant @__bprt_op_1 : memref<{{[0-9]+}}xi8> = dense<[39, 97, 114, 50, 39, 32,
// CHECK-NOT: memref.global
dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @dp(axes = ["dp"], shape = [2])
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @ranks(%x: tensor<4xi64>) -> (index, index, tensor<4xi64>) {
  %r = dist.rank on @tp
  %n = "dist.num_ranks"() {mesh = @tp} : () -> index
  %h0, %y0 = dist.all_reduce_start %x on @tp over [0, 1, 2, 3] reduction = sum phase = forward bytes = 32 {id = "ar", lineage = "l"} : tensor<4xi64>
  dist.wait %h0
  %h1, %y1 = dist.all_reduce_start %y0 on @tp over [0, 1, 2, 3] reduction = sum phase = forward bytes = 32 {id = "ar2", lineage = "l"} : tensor<4xi64>
  dist.wait %h1
  return %r, %n, %y1 : index, index, tensor<4xi64>
}

// -----

// cf.assert becomes _bprt_assert(condition, "message at location"), so a
// failed assert stops its rank by name with its message.
// CHECK: func.func private @_bprt_assert(i64, memref<*xi8>) -> i64
// CHECK-LABEL: func.func @checks
// CHECK: %[[MSG:.*]] = memref.get_global @__bprt_op_0 : memref<{{[0-9]+}}xi8>
// CHECK-NEXT: %[[CAST:.*]] = memref.cast %[[MSG]] : memref<{{[0-9]+}}xi8> to memref<*xi8>
// CHECK-NEXT: %[[FLAG:.*]] = arith.extui %arg0 : i1 to i64
// CHECK-NEXT: call @_bprt_assert(%[[FLAG]], %[[CAST]]) : (i64, memref<*xi8>) -> i64
// CHECK-NOT: cf.assert
// CHECK: memref.global "private" constant @__bprt_op_0 : memref<{{[0-9]+}}xi8> = dense<[120, 32, 109, 117, 115, 116, 32, 104, 111, 108, 100, 32, 97, 116, 32,
func.func @checks(%ok: i1) {
  cf.assert %ok, "x must hold"
  return
}

// -----

// A collective whose group is named by mesh axes: each rank builds its group
// (the ranks that differ from it only along "tp" on the 2 x 2 mesh, two of
// them) from the mesh's shape and the axis indices at run time, and passes
// it as the participants.
// CHECK: func.func private @_bprt_mesh_group(i64, memref<*xi64>, memref<*xi64>, memref<*xi64>) -> i64
// CHECK-LABEL: func.func @axes_group
// Every group named by mesh axes is built first, at the entry of every
// public function, in one order (on MPI a group splits the world, a call
// every rank makes at the same point), announced as the function's:
// CHECK: call @_bprt_op
// CHECK: call @_bprt_mesh_group
// Then each collective builds (finds) its group:
// CHECK: %[[SHAPE:.*]] = memref.alloca() : memref<2xi64>
// CHECK: %[[AXES:.*]] = memref.alloca() : memref<1xi64>
// CHECK: %[[GROUP:.*]] = memref.alloca() : memref<2xi64>
// CHECK-NEXT: %[[MEMBERS:.*]] = memref.cast %[[GROUP]] : memref<2xi64> to memref<*xi64>
// CHECK-NEXT: call @_bprt_mesh_group(%{{.*}}, %{{.*}}, %{{.*}}, %[[MEMBERS]]) : (i64, memref<*xi64>, memref<*xi64>, memref<*xi64>) -> i64
// CHECK: call @_bprt_all_reduce_f32(%{{.*}}, %[[MEMBERS]], %{{.*}}, %{{.*}}, %{{.*}})
dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @grid(axes = ["dp", "tp"], shape = [2, 2])
func.func @axes_group(%x: tensor<4xf32>) -> tensor<4xf32> {
  %h, %y = dist.all_reduce_start %x on @grid axes ["tp"] reduction = sum phase = forward bytes = 16 {id = "ar", lineage = "l"} : tensor<4xf32>
  dist.wait %h
  return %y : tensor<4xf32>
}
