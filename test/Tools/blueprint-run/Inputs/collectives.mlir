// The five collectives and a point-to-point transfer on 4 ranks, with data
// built from dist.rank: rank r holds x[i] = 10 r + i unless noted. Expected
// values by hand:
//  0 all-reduce sum f32: 60 + 4i.              1 reduce-scatter sum f64 of 8:
//    rank k gets elements 2k, 2k+1 of 60 + 4i.  2 all-reduce max bf16 of
//    10r - i: rank 3's.  3 all-reduce min i32: rank 0's.  4 all-reduce prod i64
//    of r + i + 1: (i+1)(i+2)(i+3)(i+4).  5 all-reduce sum (xor) i1 of r <= i:
//    parity of i + 1.  6 all-gather i16 along 0.  7 all-gather f32 [2, 1] along
//    axis 1: row i is 10r + i over r.  8 all-to-all i8: rank k gets 10c + k from
//    each c.  9 broadcast f16 of 10r + i + 0.5 from root 2.  10 p2p index from
//    1 to 3 (rank 3 shows what it received, the others their input).
// CHECK: rank 0: result 0 = [60, 64, 68, 72]
// CHECK-NEXT: rank 0: result 1 = [60, 64]
// CHECK-NEXT: rank 0: result 2 = [30, 29, 28, 27]
// CHECK-NEXT: rank 0: result 3 = [0, 1, 2, 3]
// CHECK-NEXT: rank 0: result 4 = [24, 120, 360, 840]
// CHECK-NEXT: rank 0: result 5 = [1, 0, 1, 0]
// CHECK-NEXT: rank 0: result 6 = [0, 1, 10, 11, 20, 21, 30, 31]
// CHECK-NEXT: rank 0: result 7 = [0, 10, 20, 30, 1, 11, 21, 31]
// CHECK-NEXT: rank 0: result 8 = [0, 10, 20, 30]
// CHECK-NEXT: rank 0: result 9 = [20.5, 21.5, 22.5]
// CHECK-NEXT: rank 0: result 10 = [0, 1]
// CHECK-NEXT: rank 1: result 0 = [60, 64, 68, 72]
// CHECK-NEXT: rank 1: result 1 = [68, 72]
// CHECK-NEXT: rank 1: result 2 = [30, 29, 28, 27]
// CHECK-NEXT: rank 1: result 3 = [0, 1, 2, 3]
// CHECK-NEXT: rank 1: result 4 = [24, 120, 360, 840]
// CHECK-NEXT: rank 1: result 5 = [1, 0, 1, 0]
// CHECK-NEXT: rank 1: result 6 = [0, 1, 10, 11, 20, 21, 30, 31]
// CHECK-NEXT: rank 1: result 7 = [0, 10, 20, 30, 1, 11, 21, 31]
// CHECK-NEXT: rank 1: result 8 = [1, 11, 21, 31]
// CHECK-NEXT: rank 1: result 9 = [20.5, 21.5, 22.5]
// CHECK-NEXT: rank 1: result 10 = [10, 11]
// CHECK-NEXT: rank 2: result 0 = [60, 64, 68, 72]
// CHECK-NEXT: rank 2: result 1 = [76, 80]
// CHECK-NEXT: rank 2: result 2 = [30, 29, 28, 27]
// CHECK-NEXT: rank 2: result 3 = [0, 1, 2, 3]
// CHECK-NEXT: rank 2: result 4 = [24, 120, 360, 840]
// CHECK-NEXT: rank 2: result 5 = [1, 0, 1, 0]
// CHECK-NEXT: rank 2: result 6 = [0, 1, 10, 11, 20, 21, 30, 31]
// CHECK-NEXT: rank 2: result 7 = [0, 10, 20, 30, 1, 11, 21, 31]
// CHECK-NEXT: rank 2: result 8 = [2, 12, 22, 32]
// CHECK-NEXT: rank 2: result 9 = [20.5, 21.5, 22.5]
// CHECK-NEXT: rank 2: result 10 = [20, 21]
// CHECK-NEXT: rank 3: result 0 = [60, 64, 68, 72]
// CHECK-NEXT: rank 3: result 1 = [84, 88]
// CHECK-NEXT: rank 3: result 2 = [30, 29, 28, 27]
// CHECK-NEXT: rank 3: result 3 = [0, 1, 2, 3]
// CHECK-NEXT: rank 3: result 4 = [24, 120, 360, 840]
// CHECK-NEXT: rank 3: result 5 = [1, 0, 1, 0]
// CHECK-NEXT: rank 3: result 6 = [0, 1, 10, 11, 20, 21, 30, 31]
// CHECK-NEXT: rank 3: result 7 = [0, 10, 20, 30, 1, 11, 21, 31]
// CHECK-NEXT: rank 3: result 8 = [3, 13, 23, 33]
// CHECK-NEXT: rank 3: result 9 = [20.5, 21.5, 22.5]
// CHECK-NEXT: rank 3: result 10 = [10, 11]
// CHECK-NOT: rank
dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["tp"], shape = [4])
func.func @collectives() -> (tensor<4xf32>, tensor<2xf64>, tensor<4xbf16>, tensor<4xi32>, tensor<4xi64>, tensor<4xi1>, tensor<8xi16>, tensor<2x4xf32>, tensor<4xi8>, tensor<3xf16>, tensor<2xindex>) {
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
  %ar = dist.all_reduce %xs on @world over [0, 1, 2, 3] reduction = sum phase = forward bytes = 16 {id = "ar_sum_f32", lineage = "l"} : tensor<4xf32>
  %rs = dist.reduce_scatter %xd on @world over [0, 1, 2, 3] reduction = sum phase = forward bytes = 64 {id = "rs_sum_f64", lineage = "l"} : tensor<8xf64> -> tensor<2xf64>
  %mx = dist.all_reduce %xb on @world over [0, 1, 2, 3] reduction = max phase = forward bytes = 8 {id = "ar_max_bf16", lineage = "l"} : tensor<4xbf16>
  %mn = dist.all_reduce %xi on @world over [0, 1, 2, 3] reduction = min phase = forward bytes = 16 {id = "ar_min_i32", lineage = "l"} : tensor<4xi32>
  %pr = dist.all_reduce %xl on @world over [0, 1, 2, 3] reduction = prod phase = forward bytes = 32 {id = "ar_prod_i64", lineage = "l"} : tensor<4xi64>
  %xo = dist.all_reduce %xf on @world over [0, 1, 2, 3] reduction = sum phase = forward bytes = 4 {id = "ar_xor_i1", lineage = "l"} : tensor<4xi1>
  %ag = dist.all_gather %xh on @world over [0, 1, 2, 3] phase = forward bytes = 4 {id = "ag_i16", lineage = "l"} : tensor<2xi16> -> tensor<8xi16>
  %ag1 = dist.all_gather %xg on @world over [0, 1, 2, 3] phase = forward bytes = 8 {axis = 1 : i64, id = "ag_axis1_f32", lineage = "l"} : tensor<2x1xf32> -> tensor<2x4xf32>
  %aa = dist.all_to_all %xa on @world over [0, 1, 2, 3] phase = forward bytes = 4 {id = "a2a_i8", lineage = "l"} : tensor<4xi8>
  %bc = dist.broadcast %xc on @world over [0, 1, 2, 3] root = 2 phase = forward bytes = 6 {id = "bc_f16", lineage = "l"} : tensor<3xf16>
  %pp = dist.p2p %xp on @world from 1 to 3 phase = forward bytes = 16 {id = "p2p_index", lineage = "l"} : tensor<2xindex>
  %is3 = arith.cmpi eq, %r, %c3 : index
  %pq = arith.select %is3, %pp, %xp : tensor<2xindex>
  return %ar, %rs, %mx, %mn, %pr, %xo, %ag, %ag1, %aa, %bc, %pq : tensor<4xf32>, tensor<2xf64>, tensor<4xbf16>, tensor<4xi32>, tensor<4xi64>, tensor<4xi1>, tensor<8xi16>, tensor<2x4xf32>, tensor<4xi8>, tensor<3xf16>, tensor<2xindex>
}
