// f32 products on memrefs with their default maps become calls of the
// runtime's strided kernel (declared once); others keep their loops.
// RUN: blueprint-opt %s --convert-linalg-matmul-to-kernels | FileCheck %s

// CHECK: func.func private @_bprt_matmul_f32(memref<*xf32>, memref<*xf32>, memref<*xf32>) -> i64
// CHECK-LABEL: func.func @products
func.func @products(%a: memref<4x8xf32>, %b: memref<8x3xf32>, %c: memref<4x3xf32>,
                    %ba: memref<2x4x8xf32>, %bb: memref<2x8x3xf32>, %bc: memref<2x4x3xf32>,
                    %s: memref<4x8xf32, strided<[16, 2], offset: 1>>) {
  // CHECK: %[[A:.*]] = memref.cast %arg0 : memref<4x8xf32> to memref<*xf32>
  // CHECK: %[[B:.*]] = memref.cast %arg1 : memref<8x3xf32> to memref<*xf32>
  // CHECK: %[[C:.*]] = memref.cast %arg2 : memref<4x3xf32> to memref<*xf32>
  // CHECK: call @_bprt_matmul_f32(%[[A]], %[[B]], %[[C]]) : (memref<*xf32>, memref<*xf32>, memref<*xf32>) -> i64
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x3xf32>) outs(%c : memref<4x3xf32>)
  // CHECK: call @_bprt_matmul_f32(
  linalg.batch_matmul ins(%ba, %bb : memref<2x4x8xf32>, memref<2x8x3xf32>) outs(%bc : memref<2x4x3xf32>)
  // A strided view is a kernel operand too (the kernel reads the strides).
  // CHECK: memref.cast %arg6 : memref<4x8xf32, strided<[16, 2], offset: 1>> to memref<*xf32>
  // CHECK: call @_bprt_matmul_f32(
  linalg.matmul ins(%s, %b : memref<4x8xf32, strided<[16, 2], offset: 1>>, memref<8x3xf32>) outs(%c : memref<4x3xf32>)
  return
}

// CHECK-LABEL: func.func @kept
func.func @kept(%a: memref<4x8xf64>, %b: memref<8x3xf64>, %c: memref<4x3xf64>,
                %t: memref<8x4xf32>, %b32: memref<8x3xf32>, %c32: memref<4x3xf32>,
                %ta: tensor<4x8xf32>, %tb: tensor<8x3xf32>, %tc: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // f64 keeps its loops.
  // CHECK: linalg.matmul ins(%arg0, %arg1 : memref<4x8xf64>, memref<8x3xf64>)
  linalg.matmul ins(%a, %b : memref<4x8xf64>, memref<8x3xf64>) outs(%c : memref<4x3xf64>)
  // A transposed operand (non-default maps) keeps its loops.
  // CHECK: linalg.matmul indexing_maps
  linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d0)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%t, %b32 : memref<8x4xf32>, memref<8x3xf32>) outs(%c32 : memref<4x3xf32>)
  // On tensors (before bufferization) nothing changes.
  // CHECK: linalg.matmul ins(%arg6, %arg7 : tensor<4x8xf32>, tensor<8x3xf32>)
  %r = linalg.matmul ins(%ta, %tb : tensor<4x8xf32>, tensor<8x3xf32>) outs(%tc : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}
