// Negative cases: the async passes never run on IR that breaks the async
// rules, and report at the offending op.
// RUN: blueprint-opt %s --split-input-file --verify-diagnostics --dist-async --dist-sink-waits

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @already_started_but_never_waited(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{async handle is never waited on ('dist.wait' missing)}}
  %h, %y = "dist.all_reduce_start"(%x) {id = "ar", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 0, 1>, reduction = "sum", message_bytes = 16 : i64} : (tensor<4xf32>) -> (!dist.async_handle, tensor<4xf32>)
  return %y : tensor<4xf32>
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @collective_outside_mesh(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{participant 4 is outside the mesh (ranks 0..3)}}
  %y = "dist.all_reduce"(%x) {id = "ar", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 0, 4>, reduction = "sum", message_bytes = 16 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
