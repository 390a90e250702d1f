// A tensor-parallel linear layer over 4 ranks (local matmul, all-reduce,
// local scaling) through every stage down to the LLVM dialect; the
// execution of this program on 4 in-process ranks is in `cargo test`
// (src/tools/execution/tests.rs).
// RUN: blueprint-opt %s --dist-async | FileCheck %s --check-prefix=ASYNC
// RUN: blueprint-opt %s --dist-async --dist-sink-waits | FileCheck %s --check-prefix=SINK
// RUN: blueprint-opt %s --dist-async --dist-sink-waits --lower-dist-to-runtime | FileCheck %s --check-prefix=CALLS
// RUN: blueprint-opt %s --pass-pipeline='builtin.module(dist-async, dist-sink-waits, dist-canonicalize, lower-dist-to-runtime, func.func(convert-elementwise-to-linalg), one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map}, buffer-results-to-out-params, ownership-based-buffer-deallocation, canonicalize, buffer-deallocation-simplification, bufferization-lower-deallocations, convert-bufferization-to-memref, convert-linalg-to-loops, expand-strided-metadata, lower-affine, convert-scf-to-cf, finalize-memref-to-llvm, convert-arith-to-llvm, convert-index-to-llvm, convert-func-to-llvm, convert-cf-to-llvm, reconcile-unrealized-casts)' > %t.llvm.mlir
// RUN: FileCheck %s --check-prefix=LLVM < %t.llvm.mlir
// Every allocation is freed: as many frees as mallocs.
// RUN: grep -c 'llvm.call @malloc' %t.llvm.mlir > %t.mallocs && grep -c 'llvm.call @free' %t.llvm.mlir | diff - %t.mallocs
// Every stage can be printed.
// RUN: blueprint-opt %s --dist-async --dist-sink-waits --lower-dist-to-runtime --mlir-print-ir-after-all 2>&1 >/dev/null | FileCheck %s --check-prefix=STAGES

// ASYNC: %[[H:.*]], %{{.*}} = dist.all_reduce_start %{{.*}} on @world over [0, 1, 2, 3] reduction = sum phase = forward bytes = 512 {id = "ar", lineage = "linear"} : tensor<8x16xf32>
// ASYNC-NEXT: dist.wait %[[H]]{{$}}
// SINK: %[[H:.*]], %{{.*}} = dist.all_reduce_start
// SINK-NEXT: %[[LOCAL:.*]] = arith.mulf %{{.*}}, %{{.*}} : tensor<8x16xf32>
// SINK-NEXT: dist.wait %[[H]]{{$}}
// CALLS: func.func private @_bprt_all_reduce_f32(i64, memref<*xi64>, memref<*xf32>, memref<*xf32>, i32) -> i64
// CALLS: func.func private @_bprt_wait(i64) -> i64
// CALLS: %[[H:.*]] = memref.alloca_scope
// CALLS: func.call @_bprt_all_reduce_f32
// CALLS: memref.alloca_scope.return
// CALLS-NEXT: }
// CALLS-NEXT: arith.mulf
// CALLS-NEXT: call @_bprt_wait(%[[H]])
// CALLS-NOT: dist.
// LLVM: llvm.func @_bprt_all_reduce_f32(i64, i64, !llvm.ptr, i64, !llvm.ptr, i64, !llvm.ptr, i32) -> i64
// The call's stack lists are released right after it.
// LLVM: llvm.intr.stacksave
// LLVM: llvm.call @_bprt_all_reduce_f32
// LLVM: llvm.intr.stackrestore
// LLVM: llvm.func @_mlir_ciface_tp_linear
// STAGES: IR Dump After DistAsync
// STAGES: IR Dump After DistSinkWaits
// STAGES: IR Dump After LowerDistToRuntime

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["tp"], shape = [4])
func.func @tp_linear(%x: memref<8x16xf32>, %w: memref<16x16xf32>, %out: memref<8x16xf32>) attributes {llvm.emit_c_interface} {
  %xt = bufferization.to_tensor %x restrict : memref<8x16xf32> to tensor<8x16xf32>
  %wt = bufferization.to_tensor %w restrict : memref<16x16xf32> to tensor<16x16xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %p = linalg.matmul ins(%xt, %wt : tensor<8x16xf32>, tensor<16x16xf32>) outs(%init : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = dist.all_reduce %p on @world over [0, 1, 2, 3] reduction = sum phase = forward bytes = 512 {id = "ar", lineage = "linear"} : tensor<8x16xf32>
  // Independent local work that can overlap the all-reduce.
  %local = arith.mulf %xt, %xt : tensor<8x16xf32>
  %z = arith.addf %y, %local : tensor<8x16xf32>
  bufferization.materialize_in_destination %z in restrict writable %out : (tensor<8x16xf32>, memref<8x16xf32>) -> ()
  return
}
