// The five collectives and a point-to-point transfer as async starts, waited
// in reverse order, with compute between the first start and its wait.
// Rank r holds x[i] = 10 r + i (see collectives.mlir); result 0 is the
// all-reduce sum 60 + 4i plus the overlapped 2 x = 20r + 2i: 60 + 20r + 6i.
// CHECK: rank 0: result 0 = [60, 66, 72, 78]
// CHECK-NEXT: rank 0: result 1 = [60, 64]
// CHECK-NEXT: rank 0: result 2 = [0, 1, 10, 11, 20, 21, 30, 31]
// CHECK-NEXT: rank 0: result 3 = [0, 10, 20, 30]
// CHECK-NEXT: rank 0: result 4 = [20.5, 21.5, 22.5]
// CHECK-NEXT: rank 0: result 5 = [0, 1]
// CHECK-NEXT: rank 1: result 0 = [80, 86, 92, 98]
// CHECK-NEXT: rank 1: result 1 = [68, 72]
// CHECK-NEXT: rank 1: result 2 = [0, 1, 10, 11, 20, 21, 30, 31]
// CHECK-NEXT: rank 1: result 3 = [1, 11, 21, 31]
// CHECK-NEXT: rank 1: result 4 = [20.5, 21.5, 22.5]
// CHECK-NEXT: rank 1: result 5 = [10, 11]
// CHECK-NEXT: rank 2: result 0 = [100, 106, 112, 118]
// CHECK-NEXT: rank 2: result 1 = [76, 80]
// CHECK-NEXT: rank 2: result 2 = [0, 1, 10, 11, 20, 21, 30, 31]
// CHECK-NEXT: rank 2: result 3 = [2, 12, 22, 32]
// CHECK-NEXT: rank 2: result 4 = [20.5, 21.5, 22.5]
// CHECK-NEXT: rank 2: result 5 = [20, 21]
// CHECK-NEXT: rank 3: result 0 = [120, 126, 132, 138]
// CHECK-NEXT: rank 3: result 1 = [84, 88]
// CHECK-NEXT: rank 3: result 2 = [0, 1, 10, 11, 20, 21, 30, 31]
// CHECK-NEXT: rank 3: result 3 = [3, 13, 23, 33]
// CHECK-NEXT: rank 3: result 4 = [20.5, 21.5, 22.5]
// CHECK-NEXT: rank 3: result 5 = [10, 11]
// CHECK-NOT: rank
dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["tp"], shape = [4])
func.func @async_collectives() -> (tensor<4xf32>, tensor<2xf64>, tensor<8xi16>, tensor<4xi8>, tensor<3xf16>, tensor<2xindex>) {
  %r = dist.rank on @world
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c10 = arith.constant 10 : index
  %xs = tensor.generate {
  ^bb0(%i0: index):
    %li = arith.addi %i0, %c0 : index
    %t = arith.muli %r, %c10 : index
    %v = arith.addi %t, %li : index
    %vi = arith.index_cast %v : index to i64
    %vt = arith.sitofp %vi : i64 to f32
    tensor.yield %vt : f32
  } : tensor<4xf32>
  %xd = tensor.generate {
  ^bb0(%i0: index):
    %li = arith.addi %i0, %c0 : index
    %t = arith.muli %r, %c10 : index
    %v = arith.addi %t, %li : index
    %vi = arith.index_cast %v : index to i64
    %vt = arith.sitofp %vi : i64 to f64
    tensor.yield %vt : f64
  } : tensor<8xf64>
  %xb = tensor.generate {
  ^bb0(%i0: index):
    %li = arith.addi %i0, %c0 : index
    %t = arith.muli %r, %c10 : index
    %v = arith.subi %t, %li : index
    %vi = arith.index_cast %v : index to i64
    %vt = arith.sitofp %vi : i64 to bf16
    tensor.yield %vt : bf16
  } : tensor<4xbf16>
  %xi = tensor.generate {
  ^bb0(%i0: index):
    %li = arith.addi %i0, %c0 : index
    %t = arith.muli %r, %c10 : index
    %v = arith.addi %t, %li : index
    %vt = arith.index_cast %v : index to i32
    tensor.yield %vt : i32
  } : tensor<4xi32>
  %xl = tensor.generate {
  ^bb0(%i0: index):
    %li = arith.addi %i0, %c0 : index
    %t = arith.addi %r, %li : index
    %v = arith.addi %t, %c1 : index
    %vt = arith.index_cast %v : index to i64
    tensor.yield %vt : i64
  } : tensor<4xi64>
  %xf = tensor.generate {
  ^bb0(%i0: index):
    %li = arith.addi %i0, %c0 : index
    %vt = arith.cmpi ule, %r, %li : index
    tensor.yield %vt : i1
  } : tensor<4xi1>
  %xh = tensor.generate {
  ^bb0(%i0: index):
    %li = arith.addi %i0, %c0 : index
    %t = arith.muli %r, %c10 : index
    %v = arith.addi %t, %li : index
    %vt = arith.index_cast %v : index to i16
    tensor.yield %vt : i16
  } : tensor<2xi16>
  %xg = tensor.generate {
  ^bb0(%i0: index, %i1: index):
    %li0 = arith.muli %i0, %c1 : index
    %li = arith.addi %li0, %i1 : index
    %t = arith.muli %r, %c10 : index
    %v = arith.addi %t, %li : index
    %vi = arith.index_cast %v : index to i64
    %vt = arith.sitofp %vi : i64 to f32
    tensor.yield %vt : f32
  } : tensor<2x1xf32>
  %xa = tensor.generate {
  ^bb0(%i0: index):
    %li = arith.addi %i0, %c0 : index
    %t = arith.muli %r, %c10 : index
    %v = arith.addi %t, %li : index
    %vt = arith.index_cast %v : index to i8
    tensor.yield %vt : i8
  } : tensor<4xi8>
  %xc = tensor.generate {
  ^bb0(%i0: index):
    %li = arith.addi %i0, %c0 : index
    %t = arith.muli %r, %c10 : index
    %v = arith.addi %t, %li : index
    %vi = arith.index_cast %v : index to i64
    %vh = arith.sitofp %vi : i64 to f16
    %half = arith.constant 0.5 : f16
    %vt = arith.addf %vh, %half : f16
    tensor.yield %vt : f16
  } : tensor<3xf16>
  %xp = tensor.generate {
  ^bb0(%i0: index):
    %li = arith.addi %i0, %c0 : index
    %t = arith.muli %r, %c10 : index
    %v = arith.addi %t, %li : index
    %vt = arith.addi %v, %c0 : index
    tensor.yield %vt : index
  } : tensor<2xindex>
  %h0, %ar = dist.all_reduce_start %xs on @world over [0, 1, 2, 3] reduction = sum phase = forward bytes = 16 {id = "ar_async", lineage = "l"} : tensor<4xf32>
  // Compute while the all-reduce is in flight.
  %twos = arith.constant dense<2.0> : tensor<4xf32>
  %z = arith.mulf %xs, %twos : tensor<4xf32>
  %h1, %rs = dist.reduce_scatter_start %xd on @world over [0, 1, 2, 3] reduction = sum phase = forward bytes = 64 {id = "rs_async", lineage = "l"} : tensor<8xf64> -> tensor<2xf64>
  %h2, %ag = dist.all_gather_start %xh on @world over [0, 1, 2, 3] phase = forward bytes = 4 {id = "ag_async", lineage = "l"} : tensor<2xi16> -> tensor<8xi16>
  %h3, %aa = dist.all_to_all_start %xa on @world over [0, 1, 2, 3] phase = forward bytes = 4 {id = "a2a_async", lineage = "l"} : tensor<4xi8>
  %h4, %bc = dist.broadcast_start %xc on @world over [0, 1, 2, 3] root = 2 phase = forward bytes = 6 {id = "bc_async", lineage = "l"} : tensor<3xf16>
  %h5, %pp = dist.p2p_start %xp on @world from 1 to 3 phase = forward bytes = 16 {id = "p2p_async", lineage = "l"} : tensor<2xindex>
  dist.wait %h5
  dist.wait %h4
  dist.wait %h3
  dist.wait %h2
  dist.wait %h1
  dist.wait %h0
  %y = arith.addf %ar, %z : tensor<4xf32>
  %is3 = arith.cmpi eq, %r, %c3 : index
  %pq = arith.select %is3, %pp, %xp : tensor<2xindex>
  return %y, %rs, %ag, %aa, %bc, %pq : tensor<4xf32>, tensor<2xf64>, tensor<8xi16>, tensor<4xi8>, tensor<3xf16>, tensor<2xindex>
}
