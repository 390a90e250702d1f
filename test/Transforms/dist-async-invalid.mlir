// Negative cases: the async passes never run on IR that breaks the async
// rules, and report at the offending op.
// RUN: blueprint-opt %s --split-input-file --verify-diagnostics --dist-async --dist-sink-waits

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @already_started_but_never_waited(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.all_reduce_start' op async handle is never waited on ('dist.wait' missing)}}
  %h, %y = dist.all_reduce_start %x on @tp over [0, 1] reduction = sum phase = forward bytes = 16 {id = "ar", lineage = "l"} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @collective_outside_mesh(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.all_reduce' op participant 4 is outside the mesh (ranks 0..3)}}
  %y = dist.all_reduce %x on @tp over [0, 4] reduction = sum phase = forward bytes = 16 {id = "ar", lineage = "l"} : tensor<4xf32>
  return %y : tensor<4xf32>
}
