// An op the lowering cannot handle is a diagnostic, and the module is left
// unchanged.
// RUN: blueprint-opt %s --split-input-file --verify-diagnostics --lower-dist-to-runtime

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @synchronous(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.all_reduce' op is synchronous; run 'dist-async' first so it has a start and a wait}}
  %y = "dist.all_reduce"(%x) {id = "ar", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 0, 1>, reduction = "sum", message_bytes = 16 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @facts_only(%t: !dist.token) -> !dist.token {
  // expected-error @+1 {{'dist.compute' op cannot be lowered to runtime calls (only async communication, redistribution copies and waits are)}}
  %t1 = "dist.compute"(%t) {id = "c", mesh = @tp, phase = "forward", lineage = "l", engine = "vector", primitive = "gelu", ops = 1 : i64, read_bytes = 2 : i64, write_bytes = 2 : i64} : (!dist.token) -> !dist.token
  return %t1 : !dist.token
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @unsupported_element(%x: tensor<4xf8E4M3FN>) -> tensor<4xf8E4M3FN> {
  // expected-error @+1 {{'dist.broadcast_start' op has element type f8E4M3FN, which the runtime does not support}}
  %h, %y = "dist.broadcast_start"(%x) {id = "bc", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 0, 1>, root = 0 : i64, message_bytes = 4 : i64} : (tensor<4xf8E4M3FN>) -> (!dist.async_handle, tensor<4xf8E4M3FN>)
  "dist.wait"(%h) : (!dist.async_handle) -> ()
  return %y : tensor<4xf8E4M3FN>
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @token_payload(%t: !dist.token) {
  // expected-error @+1 {{'dist.all_reduce_start' op communicates !dist.token, not a ranked tensor}}
  %h, %y = "dist.all_reduce_start"(%t) {id = "ar", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 0, 1>, reduction = "sum", message_bytes = 4 : i64} : (!dist.token) -> (!dist.async_handle, !dist.token)
  "dist.wait"(%h) : (!dist.async_handle) -> ()
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
// expected-error @+1 {{'func.func' op '_bprt_wait' is a runtime entry point and must have type (i64) -> i64, but has (i32) -> ()}}
func.func private @_bprt_wait(i32)
func.func @clash(%l: tensor<4xi64>, %i: index) -> tensor<4xi64> {
  %h, %o = "dist.copy_reshape"(%l, %i, %i, %i, %i, %i) {team = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>} : (tensor<4xi64>, index, index, index, index, index) -> (!dist.async_handle, tensor<4xi64>)
  "dist.wait"(%h) : (!dist.async_handle) -> ()
  return %o : tensor<4xi64>
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 2>} : () -> ()
func.func @encoded(%x: tensor<4xf32, "sparse">) {
  // expected-error @+1 {{'dist.all_gather_start' op communicates tensor<4xf32, "sparse">, whose tensor encoding the runtime lowering does not support}}
  %h, %y = "dist.all_gather_start"(%x) {id = "ag", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 0, 1>, message_bytes = 16 : i64} : (tensor<4xf32, "sparse">) -> (!dist.async_handle, tensor<8xf32, "sparse">)
  "dist.wait"(%h) : (!dist.async_handle) -> ()
  return
}
