// An op the lowering cannot handle is a diagnostic, and the module is left
// unchanged.
// RUN: blueprint-opt %s --split-input-file --verify-diagnostics --lower-dist-to-runtime

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @synchronous(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.all_reduce' op is synchronous; run 'dist-async' first so it has a start and a wait}}
  %y = dist.all_reduce %x on @tp over [0, 1] reduction = sum phase = forward bytes = 16 {id = "ar", lineage = "l"} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @facts_only(%t: !dist.token) -> !dist.token {
  // expected-error @+1 {{'dist.compute' op cannot be lowered to runtime calls (only async communication, redistribution copies and waits are)}}
  %t1 = dist.compute "c" on @tp phase = forward vector gelu(%t : !dist.token) ops = 1 read = 2 write = 2 {lineage = "l"} : !dist.token
  return %t1 : !dist.token
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @unsupported_element(%x: tensor<4xf8E4M3FN>) -> tensor<4xf8E4M3FN> {
  // expected-error @+1 {{'dist.broadcast_start' op has element type f8E4M3FN, which the runtime does not support}}
  %h, %y = dist.broadcast_start %x on @tp over [0, 1] root = 0 phase = forward bytes = 4 {id = "bc", lineage = "l"} : tensor<4xf8E4M3FN>
  dist.wait %h
  return %y : tensor<4xf8E4M3FN>
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @token_payload(%t: !dist.token) {
  // expected-error @+1 {{'dist.all_reduce_start' op communicates !dist.token, not a ranked tensor}}
  %h, %y = dist.all_reduce_start %t on @tp over [0, 1] reduction = sum phase = forward bytes = 4 {id = "ar", lineage = "l"} : !dist.token
  dist.wait %h
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
// expected-error @+1 {{'func.func' op '_bprt_wait' is a runtime entry point and must have type (i64) -> i64, but has (i32) -> ()}}
func.func private @_bprt_wait(i32)
func.func @clash(%l: tensor<4xi64>, %i: index) -> tensor<4xi64> {
  %h, %o = dist.copy_reshape %l g_shape %i l_offs %i to n_g_shape %i n_offs %i n_shape %i {team = 1 : i64} : tensor<4xi64> -> tensor<4xi64>
  dist.wait %h
  return %o : tensor<4xi64>
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [2])
func.func @encoded(%x: tensor<4xf32, "sparse">) {
  // expected-error @+1 {{'dist.all_gather_start' op communicates tensor<4xf32, "sparse">, whose tensor encoding the runtime lowering does not support}}
  %h, %y = dist.all_gather_start %x on @tp over [0, 1] phase = forward bytes = 16 {id = "ag", lineage = "l"} : tensor<4xf32, "sparse"> -> tensor<8xf32, "sparse">
  dist.wait %h
  return
}

// -----

// A task placed on a mesh slice (one pipeline stage's) runs on that
// slice's ranks only: the runtime lowering takes explicit ranks there.
dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @grid(axes = ["pp", "tp"], shape = [2, 2])
func.func @on_slice(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.all_reduce_start' op is placed on a mesh slice; the runtime lowering needs explicit ranks}}
  %h, %y = dist.all_reduce_start %x on @grid slice [0, -1] axes ["tp"] reduction = sum phase = forward bytes = 16 {id = "ar", lineage = "l"} : tensor<4xf32>
  dist.wait %h
  return %y : tensor<4xf32>
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @grid(axes = ["dp", "tp"], shape = [2, 2])
func.func @on_slice(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.broadcast_start' op is placed on a mesh slice; the runtime lowering needs explicit ranks}}
  %h, %y = dist.broadcast_start %x on @grid slice [0, -1] over [0, 1] root = 0 phase = forward bytes = 16 {id = "bc", lineage = "l"} : tensor<4xf32>
  dist.wait %h
  return %y : tensor<4xf32>
}
