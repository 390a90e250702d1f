// The traits from the ODS reach upstream passes: `cse` merges identical
// pure ops (rank queries) and erases unused ones, but never merges or erases
// tasks, which do work, move data or order other tasks (memory effects);
// `canonicalize` erases unused pure ops and keeps every task.
// RUN: blueprint-opt %s --cse | FileCheck %s --check-prefix=CSE
// RUN: blueprint-opt %s --canonicalize | FileCheck %s --check-prefix=CANON
// RUN: blueprint-opt %s --pass-pipeline='builtin.module(canonicalize, cse)' | FileCheck %s --check-prefix=BOTH

model.header schema "blueprint.model" version "1.0"
dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
dist.mesh @m(axes = ["x"], shape = [4])

// Two rank queries of one mesh are one value.
// CSE-LABEL: func.func @queries
// CSE-NEXT: %[[R:.*]] = dist.rank on @m{{$}}
// CSE-NEXT: %[[N:.*]] = dist.num_ranks on @m{{$}}
// CSE-NEXT: return %[[R]], %[[R]], %[[N]], %[[N]] : index, index, index, index
// canonicalize alone does not merge them.
// CANON-LABEL: func.func @queries
// CANON-COUNT-2: dist.rank on @m
// CANON-COUNT-2: dist.num_ranks on @m
// CANON-NEXT: return
func.func @queries() -> (index, index, index, index) {
  %r0 = dist.rank on @m
  %r1 = dist.rank on @m
  %n0 = dist.num_ranks on @m
  %n1 = dist.num_ranks on @m
  return %r0, %r1, %n0, %n1 : index, index, index, index
}

// Two identical copies are two copies, each with its own wait.
// CSE-LABEL: func.func @copies
// CSE-NEXT: %[[H0:.*]], %[[O0:.*]] = dist.copy_reshape %arg0 g_shape %arg1 l_offs %arg1 to n_g_shape %arg1 n_offs %arg1 n_shape %arg1 {team = @m} : tensor<?xi64> -> tensor<?xi64>
// CSE-NEXT: dist.wait %[[H0]]{{$}}
// CSE-NEXT: %[[H1:.*]], %[[O1:.*]] = dist.copy_reshape %arg0 g_shape %arg1 l_offs %arg1 to n_g_shape %arg1 n_offs %arg1 n_shape %arg1 {team = @m} : tensor<?xi64> -> tensor<?xi64>
// CSE-NEXT: dist.wait %[[H1]]{{$}}
// CSE-NEXT: return %[[O0]], %[[O1]] : tensor<?xi64>, tensor<?xi64>
// BOTH-LABEL: func.func @copies
// BOTH-COUNT-2: dist.copy_reshape
// BOTH-NOT: dist.copy_reshape
// BOTH: return
func.func @copies(%l: tensor<?xi64>, %i: index) -> (tensor<?xi64>, tensor<?xi64>) {
  %h0, %o0 = dist.copy_reshape %l g_shape %i l_offs %i to n_g_shape %i n_offs %i n_shape %i {team = @m} : tensor<?xi64> -> tensor<?xi64>
  dist.wait %h0
  %h1, %o1 = dist.copy_reshape %l g_shape %i l_offs %i to n_g_shape %i n_offs %i n_shape %i {team = @m} : tensor<?xi64> -> tensor<?xi64>
  dist.wait %h1
  return %o0, %o1 : tensor<?xi64>, tensor<?xi64>
}

// Unused results: pure ops (a rank query, a join) go; tasks stay.
// CSE-LABEL: func.func @unused_dist
// CSE-NOT: dist.rank
// CSE-NOT: dist.control
// CSE: dist.compute "c" on @m
// CSE-NEXT: dist.all_reduce %arg1 on @m
// CSE-NEXT: %[[H:.*]], %{{.*}} = dist.p2p_start %arg1 on @m
// CSE-NEXT: dist.wait %[[H]]{{$}}
// CSE-NEXT: return
// CANON-LABEL: func.func @unused_dist
// CANON-NEXT: dist.compute "c" on @m phase = forward vector gelu(%arg0 : !dist.token) ops = 1 read = 2 write = 2 {lineage = "l"} : !dist.token
// CANON-NEXT: dist.all_reduce %arg1 on @m over [0, 1] reduction = sum phase = forward bytes = 16 {id = "ar", lineage = "l"} : tensor<4xf32>
// CANON-NEXT: %[[H:.*]], %{{.*}} = dist.p2p_start %arg1 on @m from 0 to 1 phase = forward bytes = 16 {id = "p", lineage = "l"} : tensor<4xf32>
// CANON-NEXT: dist.wait %[[H]]{{$}}
// CANON-NEXT: return
func.func @unused_dist(%t: !dist.token, %x: tensor<4xf32>) {
  %r = dist.rank on @m
  %c = dist.compute "c" on @m phase = forward vector gelu(%t : !dist.token) ops = 1 read = 2 write = 2 {lineage = "l"} : !dist.token
  %j = dist.control "join" on @m phase = forward(%t : !dist.token) {lineage = "l"}
  %y = dist.all_reduce %x on @m over [0, 1] reduction = sum phase = forward bytes = 16 {id = "ar", lineage = "l"} : tensor<4xf32>
  %h, %z = dist.p2p_start %x on @m from 0 to 1 phase = forward bytes = 16 {id = "p", lineage = "l"} : tensor<4xf32>
  dist.wait %h
  return
}

// ModelIR: math is pure, an op with an effect (dropout consumes random
// state) stays.
// CANON-LABEL: func.func @unused_model
// CANON-NEXT: %[[X:.*]] = model.value "x" input : tensor<4xf16>
// CANON-NEXT: model.dropout "drop"(%[[X]]) p = 0.000000e+00 effects(random_state) : (tensor<4xf16>) -> tensor<4xf16>
// CANON-NEXT: return
func.func @unused_model() {
  %x = model.value "x" input : tensor<4xf16>
  %g = model.gelu "act"(%x) : (tensor<4xf16>) -> tensor<4xf16>
  %d = model.dropout "drop"(%x) p = 0.0 effects(random_state) : (tensor<4xf16>) -> tensor<4xf16>
  return
}

// Plan tasks state work: an unused one stays, and identical facts of two
// tasks do not make them one.
// BOTH-LABEL: func.func @unused_plan
// BOTH-NEXT: %[[A:.*]] = plan.compute_task "t0" matrix_multiply phase = forward ops = 1 read = 0 write = 0 demand(1, 0, 0) ranks = 1 group = compute {lineage = "t"}
// BOTH-NEXT: plan.compute_task "t1" matrix_multiply phase = forward ops = 1 read = 0 write = 0 demand(1, 0, 0) ranks = 1 group = compute {lineage = "t"}
// BOTH-NEXT: plan.collective_task "ar" after(%[[A]]) all_reduce bytes = 8 phase = forward ops = 0 read = 0 write = 0 demand(0, 0, 8) ranks = 2 group = network {lineage = "ar"}
// BOTH-NEXT: return
func.func @unused_plan() {
  %a = plan.compute_task "t0" matrix_multiply phase = forward ops = 1 read = 0 write = 0 demand(1, 0, 0) ranks = 1 group = compute {lineage = "t"}
  %b = plan.compute_task "t1" matrix_multiply phase = forward ops = 1 read = 0 write = 0 demand(1, 0, 0) ranks = 1 group = compute {lineage = "t"}
  %c = plan.collective_task "ar" after(%a) all_reduce bytes = 8 phase = forward ops = 0 read = 0 write = 0 demand(0, 0, 8) ranks = 2 group = network {lineage = "ar"}
  return
}
