// RUN: blueprint-opt %s --dist-async --split-input-file | FileCheck %s
// Running it twice changes nothing the second time.
// RUN: blueprint-opt %s --dist-async --split-input-file > %t.once && blueprint-opt %t.once --dist-async --split-input-file | diff %t.once -

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])

// CHECK-LABEL: func.func @tp_linear
func.func @tp_linear(%x: tensor<8x16xf32>, %t: !dist.token) -> tensor<8x16xf32> {
  // CHECK: %[[H:.*]], %[[Y:.*]] = dist.all_reduce_start %arg0 after(%arg1) on @tp over [0, 1, 2, 3] reduction = sum phase = forward bytes = 512 {id = "ar", lineage = "l"} : tensor<8x16xf32>
  // CHECK-NEXT: dist.wait %[[H]]{{$}}
  // CHECK-NEXT: %[[SUM:.*]] = arith.addf %[[Y]], %[[Y]]
  %y = dist.all_reduce %x after(%t) on @tp over [0, 1, 2, 3] reduction = sum phase = forward bytes = 512 {id = "ar", lineage = "l"} : tensor<8x16xf32>
  %z = arith.addf %y, %y : tensor<8x16xf32>
  // CHECK: return %[[SUM]]
  return %z : tensor<8x16xf32>
}

// CHECK-LABEL: func.func @every_kind
func.func @every_kind(%x: tensor<8x16xf32>) {
  // CHECK: %[[H0:.*]], %[[A:.*]] = dist.reduce_scatter_start %arg0 on @tp over [0, 1, 2, 3] reduction = sum phase = forward bytes = 512 {id = "rs", lineage = "l"} : tensor<8x16xf32> -> tensor<2x16xf32>
  // CHECK-NEXT: dist.wait %[[H0]]{{$}}
  %a = dist.reduce_scatter %x on @tp over [0, 1, 2, 3] reduction = sum phase = forward bytes = 512 {id = "rs", lineage = "l"} : tensor<8x16xf32> -> tensor<2x16xf32>
  // CHECK-NEXT: %[[H1:.*]], %[[B:.*]] = dist.all_gather_start %[[A]] on @tp over [0, 1, 2, 3] phase = forward bytes = 512 {id = "ag", lineage = "l"} : tensor<2x16xf32> -> tensor<8x16xf32>
  // CHECK-NEXT: dist.wait %[[H1]]{{$}}
  %b = dist.all_gather %a on @tp over [0, 1, 2, 3] phase = forward bytes = 512 {id = "ag", lineage = "l"} : tensor<2x16xf32> -> tensor<8x16xf32>
  // CHECK-NEXT: %[[H2:.*]], %[[C:.*]] = dist.all_to_all_start %[[B]] on @tp over [0, 1, 2, 3] phase = forward bytes = 512 {id = "a2a", lineage = "l"} : tensor<8x16xf32>
  // CHECK-NEXT: dist.wait %[[H2]]{{$}}
  %c = dist.all_to_all %b on @tp over [0, 1, 2, 3] phase = forward bytes = 512 {id = "a2a", lineage = "l"} : tensor<8x16xf32>
  // CHECK-NEXT: %[[H3:.*]], %[[D:.*]] = dist.broadcast_start %[[C]] on @tp over [0, 1] root = 1 phase = forward bytes = 512 {id = "bc", lineage = "l"} : tensor<8x16xf32>
  // CHECK-NEXT: dist.wait %[[H3]]{{$}}
  %d = dist.broadcast %c on @tp over [0, 1] root = 1 phase = forward bytes = 512 {id = "bc", lineage = "l"} : tensor<8x16xf32>
  // CHECK-NEXT: %[[H4:.*]], %{{.*}} = dist.p2p_start %[[D]] on @tp from 0 to 1 phase = forward bytes = 512 {id = "p", lineage = "l"} : tensor<8x16xf32>
  // CHECK-NEXT: dist.wait %[[H4]]{{$}}
  // CHECK-NOT: dist.p2p %
  %e = dist.p2p %d on @tp from 0 to 1 phase = forward bytes = 512 {id = "p", lineage = "l"} : tensor<8x16xf32>
  return
}

// -----

// Every attribute of the synchronous op is kept: slices, ranks, mesh-axis
// groups, `along`, local work, axis.
dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [2, 2, 2])
// CHECK-LABEL: func.func @kept
func.func @kept(%x: tensor<8x16xf32>, %t: !dist.token) -> (tensor<8x16xf32>, tensor<8x8xf32>, tensor<8x16xf32>) {
  // CHECK: %[[H0:.*]], %[[A:.*]] = dist.all_reduce_start %arg0 after(%arg1) on @world slice [-1, 1, -1] axes ["dp"] reduction = max phase = weight_gradient bytes = 512 {id = "ar", lineage = "l", ops = 128 : i64, read_bytes = 1024 : i64, write_bytes = 512 : i64} : tensor<8x16xf32>
  // CHECK-NEXT: dist.wait %[[H0]]{{$}}
  %a = dist.all_reduce %x after(%t) on @world slice [-1, 1, -1] axes ["dp"] reduction = max phase = weight_gradient bytes = 512 {id = "ar", lineage = "l", ops = 128 : i64, read_bytes = 1024 : i64, write_bytes = 512 : i64} : tensor<8x16xf32>
  // CHECK-NEXT: %[[H1:.*]], %[[B:.*]] = dist.reduce_scatter_start %arg0 on @world ranks [0, 1, 2, 3] over [0, 1] reduction = sum phase = activation_gradient bytes = 512 {axis = 1 : i64, id = "rs", lineage = "l"} : tensor<8x16xf32> -> tensor<8x8xf32>
  // CHECK-NEXT: dist.wait %[[H1]]{{$}}
  %b = dist.reduce_scatter %x on @world ranks [0, 1, 2, 3] over [0, 1] reduction = sum phase = activation_gradient bytes = 512 {axis = 1 : i64, id = "rs", lineage = "l"} : tensor<8x16xf32> -> tensor<8x8xf32>
  // CHECK-NEXT: %[[H2:.*]], %[[C:.*]] = dist.p2p_start %arg0 on @world slice [-1, -1, 0] along "pp" from 0 to 1 phase = forward bytes = 512 {id = "p", lineage = "l"} : tensor<8x16xf32>
  // CHECK-NEXT: dist.wait %[[H2]]{{$}}
  %c = dist.p2p %x on @world slice [-1, -1, 0] along "pp" from 0 to 1 phase = forward bytes = 512 {id = "p", lineage = "l"} : tensor<8x16xf32>
  // CHECK-NEXT: return %[[A]], %[[B]], %[[C]]
  return %a, %b, %c : tensor<8x16xf32>, tensor<8x8xf32>, tensor<8x16xf32>
}

// -----

// A program with nothing to make async is left as it is.
dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
// CHECK-LABEL: func.func @nothing
// CHECK-NEXT: dist.compute "c" on @tp phase = forward vector gelu(%arg0 : !dist.token) ops = 1 read = 2 write = 2 {lineage = "l"} : !dist.token
// CHECK-NEXT: return
func.func @nothing(%t: !dist.token) {
  %t1 = dist.compute "c" on @tp phase = forward vector gelu(%t : !dist.token) ops = 1 read = 2 write = 2 {lineage = "l"} : !dist.token
  return
}
