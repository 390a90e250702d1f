// RUN: blueprint-opt %s --split-input-file --verify-diagnostics
// One case per DistributedTaskIR verifier rule.

// expected-error @+1 {{'dist.mesh' op is in a module without a 'dist.header'}}
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()

// -----

// expected-error @+1 {{attribute 'model_digest' must be 'sha256:' followed by 64 lowercase hex digits, but got 'abc'}}
"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "abc"} : () -> ()

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
// expected-error @+1 {{'dist.mesh' op must have at least one axis}}
"dist.mesh"() {sym_name = "m", axes = [], shape = array<i64>} : () -> ()

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
// expected-error @+1 {{'dist.mesh' op expected 2 axis sizes (one per axis), but got 1}}
"dist.mesh"() {sym_name = "m", axes = ["a", "b"], shape = array<i64: 4>} : () -> ()

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
// expected-error @+1 {{'dist.mesh' op axis 'a' is named twice}}
"dist.mesh"() {sym_name = "m", axes = ["a", "a"], shape = array<i64: 2, 2>} : () -> ()

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
// expected-error @+1 {{'dist.mesh' op axis #0 must have a positive size, but got 0}}
"dist.mesh"() {sym_name = "m", axes = ["a"], shape = array<i64: 0>} : () -> ()

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
// expected-error @+1 {{redefinition of symbol named 'tp'}}
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @unknown_mesh() {
  // expected-error @+1 {{'dist.value' op 'mesh' @nowhere does not name a valid 'dist.mesh' in this module}}
  %x = "dist.value"() {id = "x", mesh = @nowhere, split_axes = [[]], lineage = "x"} : () -> tensor<4xf16>
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @empty_lineage() {
  // expected-error @+1 {{'dist.value' op lineage must name the ModelIR op or value this comes from}}
  %x = "dist.value"() {id = "x", mesh = @tp, split_axes = [[]], lineage = ""} : () -> tensor<4xf16>
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @sharding_rank() {
  // expected-error @+1 {{'dist.value' op 'split_axes' has 1 entries, but the value has rank 2}}
  %x = "dist.value"() {id = "x", mesh = @tp, split_axes = [["tp"]], lineage = "x"} : () -> tensor<4x4xf16>
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @sharding_axis() {
  // expected-error @+1 {{'dist.value' op 'split_axes' names 'dp', which is not an axis of the mesh}}
  %x = "dist.value"() {id = "x", mesh = @tp, split_axes = [["dp"], []], lineage = "x"} : () -> tensor<4x4xf16>
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @sharding_axis_twice() {
  // expected-error @+1 {{'dist.value' op 'split_axes' uses mesh axis 'tp' more than once}}
  %x = "dist.value"() {id = "x", mesh = @tp, split_axes = [["tp"], ["tp"]], lineage = "x"} : () -> tensor<4x4xf16>
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @sharding_uneven() {
  // expected-error @+2 {{'dist.output' op dimension 0 of size 6 cannot be split evenly over 4 ranks}}
  %x = "dist.value"() {id = "x", mesh = @tp, split_axes = [[], []], lineage = "x"} : () -> tensor<6x4xf16>
  "dist.output"(%x) {id = "y", mesh = @tp, split_axes = [["tp"], []], lineage = "y"} : (tensor<6x4xf16>) -> ()
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @owner_outside() {
  // expected-error @+1 {{'dist.value' op owner 4 is outside the mesh (ranks 0..3)}}
  %x = "dist.value"() {id = "x", mesh = @tp, split_axes = [[]], owners = array<i64: 0, 4>, lineage = "x"} : () -> tensor<4xf16>
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @owner_twice() {
  // expected-error @+1 {{'dist.value' op owner 1 appears more than once in 'owners'}}
  %x = "dist.value"() {id = "x", mesh = @tp, split_axes = [[]], owners = array<i64: 1, 1>, lineage = "x"} : () -> tensor<4xf16>
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @compute_ranks(%t: !dist.token) {
  // expected-error @+1 {{'dist.compute' op rank -1 is outside the mesh (ranks 0..3)}}
  %t1 = "dist.compute"(%t) {id = "c", mesh = @tp, phase = "forward", lineage = "l", engine = "vector", primitive = "gelu", ops = 1 : i64, read_bytes = 2 : i64, write_bytes = 2 : i64, ranks = array<i64: -1>} : (!dist.token) -> !dist.token
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @negative_work(%t: !dist.token) {
  // expected-error @+1 {{'dist.compute' op attribute 'read_bytes' must be non-negative, but got -2}}
  %t1 = "dist.compute"(%t) {id = "c", mesh = @tp, phase = "forward", lineage = "l", engine = "vector", primitive = "gelu", ops = 1 : i64, read_bytes = -2 : i64, write_bytes = 2 : i64} : (!dist.token) -> !dist.token
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @bad_engine(%t: !dist.token) {
  // expected-error @+1 {{'"tensor_core"' does not satisfy the constraint}}
  %t1 = "dist.compute"(%t) {id = "c", mesh = @tp, phase = "forward", lineage = "l", engine = "tensor_core", primitive = "gelu", ops = 1 : i64, read_bytes = 2 : i64, write_bytes = 2 : i64} : (!dist.token) -> !dist.token
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @reshard_type(%x: tensor<4x4xf16>) {
  // expected-error @+1 {{'dist.reshard' op must keep the logical type, but tensor<4x4xf16> becomes tensor<4x8xf16>}}
  %y = "dist.reshard"(%x) {id = "r", mesh = @tp, phase = "forward", lineage = "l", from_split_axes = [[], []], to_split_axes = [["tp"], []]} : (tensor<4x4xf16>) -> tensor<4x8xf16>
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @reshard_sharding(%x: tensor<4x4xf16>) {
  // expected-error @+1 {{'dist.reshard' op 'to_split_axes' has 1 entries, but the value has rank 2}}
  %y = "dist.reshard"(%x) {id = "r", mesh = @tp, phase = "forward", lineage = "l", from_split_axes = [[], []], to_split_axes = [["tp"]]} : (tensor<4x4xf16>) -> tensor<4x4xf16>
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @participants_empty(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.all_reduce' op 'participants' must not be empty}}
  %y = "dist.all_reduce"(%x) {id = "ar", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64>, reduction = "sum", message_bytes = 8 : i64} : (tensor<4xf16>) -> tensor<4xf16>
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @participant_outside(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.all_reduce' op participant 7 is outside the mesh (ranks 0..3)}}
  %y = "dist.all_reduce"(%x) {id = "ar", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 0, 7>, reduction = "sum", message_bytes = 8 : i64} : (tensor<4xf16>) -> tensor<4xf16>
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @participant_twice(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.all_to_all' op participant 2 appears more than once in 'participants'}}
  %y = "dist.all_to_all"(%x) {id = "a2a", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 2, 2>, message_bytes = 8 : i64} : (tensor<4xf16>) -> tensor<4xf16>
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @reduction_missing(%x: tensor<4xf16>) {
  // expected-error @+1 {{attribute "reduction" is expected but not provided}}
  %y = "dist.reduce_scatter"(%x) {id = "rs", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 0, 1>, message_bytes = 8 : i64} : (tensor<4xf16>) -> tensor<2xf16>
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @reduction_not_allowed(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.all_gather' op does not take a reduction (only all_reduce and reduce_scatter do)}}
  %y = "dist.all_gather"(%x) {id = "ag", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 0, 1>, reduction = "sum", message_bytes = 8 : i64} : (tensor<4xf16>) -> tensor<8xf16>
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @root_not_allowed(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.all_reduce' op does not take a root (only broadcast does)}}
  %y = "dist.all_reduce"(%x) {id = "ar", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 0, 1>, reduction = "sum", root = 0 : i64, message_bytes = 8 : i64} : (tensor<4xf16>) -> tensor<4xf16>
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @root_outside(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.broadcast' op root 3 is not one of the participants}}
  %y = "dist.broadcast"(%x) {id = "bc", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 0, 1>, root = 3 : i64, message_bytes = 8 : i64} : (tensor<4xf16>) -> tensor<4xf16>
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @negative_message(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.broadcast' op attribute 'message_bytes' must be non-negative, but got -8}}
  %y = "dist.broadcast"(%x) {id = "bc", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 0, 1>, root = 0 : i64, message_bytes = -8 : i64} : (tensor<4xf16>) -> tensor<4xf16>
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @all_reduce_type(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.all_reduce' op result type tensor<4xf32> must equal the input type tensor<4xf16>}}
  %y = "dist.all_reduce"(%x) {id = "ar", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 0, 1>, reduction = "sum", message_bytes = 8 : i64} : (tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @reduce_scatter_shape(%x: tensor<8x4xf16>) {
  // expected-error @+1 {{'dist.reduce_scatter' op expected result dimension 0 to be 4, but got 8}}
  %y = "dist.reduce_scatter"(%x) {id = "rs", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 0, 1>, reduction = "sum", message_bytes = 64 : i64} : (tensor<8x4xf16>) -> tensor<8x4xf16>
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @reduce_scatter_uneven(%x: tensor<6x4xf16>) {
  // expected-error @+1 {{'dist.reduce_scatter' op dimension 0 of size 6 cannot be scattered over 4 participants}}
  %y = "dist.reduce_scatter"(%x) {id = "rs", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 0, 1, 2, 3>, reduction = "sum", message_bytes = 48 : i64} : (tensor<6x4xf16>) -> tensor<1x4xf16>
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @all_gather_axis(%x: tensor<8x4xf16>) {
  // expected-error @+1 {{'dist.all_gather' op axis 2 is not a dimension of both input}}
  %y = "dist.all_gather"(%x) {id = "ag", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 0, 1>, axis = 2 : i64, message_bytes = 64 : i64} : (tensor<8x4xf16>) -> tensor<16x4xf16>
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @collective_deps_are_tokens(%x: tensor<4xf16>) {
  // expected-error @+1 {{expected base type 'dist.token' but got 'builtin.tensor'}}
  %y = "dist.all_reduce"(%x, %x) {id = "ar", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 0, 1>, reduction = "sum", message_bytes = 8 : i64} : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @p2p_same_rank(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.p2p' op source and dest must differ, but both are 2}}
  %y = "dist.p2p"(%x) {id = "p", mesh = @tp, phase = "forward", lineage = "l", source = 2 : i64, dest = 2 : i64, message_bytes = 8 : i64} : (tensor<4xf16>) -> tensor<4xf16>
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @p2p_outside(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.p2p' op dest 4 is outside the mesh (ranks 0..3)}}
  %y = "dist.p2p"(%x) {id = "p", mesh = @tp, phase = "forward", lineage = "l", source = 0 : i64, dest = 4 : i64, message_bytes = 8 : i64} : (tensor<4xf16>) -> tensor<4xf16>
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @never_waited(%x: tensor<4xf16>) -> tensor<4xf16> {
  // expected-error @+1 {{'dist.all_reduce_start' op async handle is never waited on ('dist.wait' missing)}}
  %h, %y = "dist.all_reduce_start"(%x) {id = "ar", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 0, 1>, reduction = "sum", message_bytes = 8 : i64} : (tensor<4xf16>) -> (!dist.async_handle, tensor<4xf16>)
  return %y : tensor<4xf16>
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @waited_twice(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.all_gather_start' op async handle is waited 2 times; it must be waited exactly once}}
  %h, %y = "dist.all_gather_start"(%x) {id = "ag", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 0, 1>, message_bytes = 8 : i64} : (tensor<4xf16>) -> (!dist.async_handle, tensor<8xf16>)
  "dist.wait"(%h) : (!dist.async_handle) -> ()
  "dist.wait"(%h) : (!dist.async_handle) -> ()
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func private @consume(!dist.async_handle)
func.func @handle_escapes(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.p2p_start' op async handle may only be used by 'dist.wait', but is used by 'func.call'}}
  %h, %y = "dist.p2p_start"(%x) {id = "p", mesh = @tp, phase = "forward", lineage = "l", source = 0 : i64, dest = 1 : i64, message_bytes = 8 : i64} : (tensor<4xf16>) -> (!dist.async_handle, tensor<4xf16>)
  func.call @consume(%h) : (!dist.async_handle) -> ()
  "dist.wait"(%h) : (!dist.async_handle) -> ()
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @use_before_wait(%x: tensor<4xf16>) -> tensor<4xf16> {
  %h, %y = "dist.all_reduce_start"(%x) {id = "ar", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 0, 1>, reduction = "sum", message_bytes = 8 : i64} : (tensor<4xf16>) -> (!dist.async_handle, tensor<4xf16>)
  // expected-error @+1 {{'arith.addf' op uses the result of 'dist.all_reduce_start' before the 'dist.wait' on its handle}}
  %z = arith.addf %y, %y : tensor<4xf16>
  "dist.wait"(%h) : (!dist.async_handle) -> ()
  return %z : tensor<4xf16>
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @wait_in_branch(%x: tensor<4xf16>, %c: i1) -> tensor<4xf16> {
  %h, %y = "dist.broadcast_start"(%x) {id = "bc", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 0, 1>, root = 0 : i64, message_bytes = 8 : i64} : (tensor<4xf16>) -> (!dist.async_handle, tensor<4xf16>)
  scf.if %c {
    "dist.wait"(%h) : (!dist.async_handle) -> ()
  }
  // expected-error @+1 {{'func.return' op uses the result of 'dist.broadcast_start' before the 'dist.wait' on its handle}}
  return %y : tensor<4xf16>
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
func.func @reshape_segments(%l: tensor<?x?xi64>, %i: index) {
  // expected-error @+1 {{'dist.copy_reshape' op expected 2 'l_offsets' operands (the input rank), but got 1}}
  %h, %o = "dist.copy_reshape"(%l, %i, %i, %i, %i, %i, %i) {team = 1 : i64, operandSegmentSizes = array<i32: 1, 2, 1, 1, 1, 1>} : (tensor<?x?xi64>, index, index, index, index, index, index) -> (!dist.async_handle, tensor<?xi64>)
  "dist.wait"(%h) : (!dist.async_handle) -> ()
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
func.func @reshape_element_type(%l: tensor<?x?xi64>, %i: index) {
  // expected-error @+1 {{'dist.copy_reshape' op result element type must match the input's}}
  %h, %o = "dist.copy_reshape"(%l, %i, %i, %i, %i, %i, %i, %i) {team = 1 : i64, operandSegmentSizes = array<i32: 1, 2, 2, 1, 1, 1>} : (tensor<?x?xi64>, index, index, index, index, index, index, index) -> (!dist.async_handle, tensor<?xf32>)
  "dist.wait"(%h) : (!dist.async_handle) -> ()
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
func.func @permute_axes(%l: tensor<?x?xi64>, %i: index) {
  // expected-error @+1 {{'dist.copy_permute' op 'axes' [1, 1] must be a permutation of 0..2}}
  %h, %o = "dist.copy_permute"(%l, %i, %i, %i, %i, %i, %i, %i, %i) {team = 1 : i64, axes = array<i64: 1, 1>, operandSegmentSizes = array<i32: 1, 2, 2, 2, 2>} : (tensor<?x?xi64>, index, index, index, index, index, index, index, index) -> (!dist.async_handle, tensor<?x?xi64>)
  "dist.wait"(%h) : (!dist.async_handle) -> ()
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
func.func @permute_rank(%l: tensor<?x?xi64>, %i: index) {
  // expected-error @+1 {{'dist.copy_permute' op a permutation keeps the rank, but input has rank 2 and result 1}}
  %h, %o = "dist.copy_permute"(%l, %i, %i, %i, %i, %i, %i) {team = 1 : i64, axes = array<i64: 1, 0>, operandSegmentSizes = array<i32: 1, 2, 2, 1, 1>} : (tensor<?x?xi64>, index, index, index, index, index, index) -> (!dist.async_handle, tensor<?xi64>)
  "dist.wait"(%h) : (!dist.async_handle) -> ()
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
func.func @team_symbol(%l: tensor<?xi64>, %i: index) {
  // expected-error @+1 {{'dist.copy_reshape' op 'team' @nowhere does not name a valid 'dist.mesh' in this module}}
  %h, %o = "dist.copy_reshape"(%l, %i, %i, %i, %i, %i) {team = @nowhere, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>} : (tensor<?xi64>, index, index, index, index, index) -> (!dist.async_handle, tensor<?xi64>)
  "dist.wait"(%h) : (!dist.async_handle) -> ()
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @forbidden_field(%t: !dist.token) {
  // expected-error @+1 {{attribute 'queue' is a placement or target field, illegal in the 'dist' layer}}
  %t1 = "dist.compute"(%t) {id = "c", mesh = @tp, phase = "forward", lineage = "l", engine = "vector", primitive = "gelu", ops = 1 : i64, read_bytes = 2 : i64, write_bytes = 2 : i64, queue = 3 : i64} : (!dist.token) -> !dist.token
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @target_library(%t: !dist.token) {
  // expected-error @+1 {{attribute 'primitive' names target 'nccl' in "nccl_allreduce"}}
  %t1 = "dist.compute"(%t) {id = "c", mesh = @tp, phase = "forward", lineage = "l", engine = "vector", primitive = "nccl_allreduce", ops = 1 : i64, read_bytes = 2 : i64, write_bytes = 2 : i64} : (!dist.token) -> !dist.token
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @reserved_semantic_field(%t: !dist.token) {
  // expected-error @+1 {{attribute 'user.info' nests field 'datatype', a placement or target field illegal in the 'dist' layer}}
  %t1 = "dist.compute"(%t) {id = "c", mesh = @tp, phase = "forward", lineage = "l", engine = "vector", primitive = "gelu", ops = 1 : i64, read_bytes = 2 : i64, write_bytes = 2 : i64, user.info = {datatype = "float16"}} : (!dist.token) -> !dist.token
  return
}

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
// expected-error @+1 {{'dist.memory' op attribute 'bytes' must be non-negative, but got -1}}
"dist.memory"() {id = "m", mesh = @tp, kind = "weight", bytes = -1 : i64, lineage = "b"} : () -> ()

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
// expected-error @+1 {{'"registers"' does not satisfy the constraint}}
"dist.memory"() {id = "m", mesh = @tp, kind = "registers", bytes = 1 : i64, lineage = "b"} : () -> ()

// -----

"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()
func.func @negative_local_work(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.all_reduce' op attribute 'ops' must be non-negative, but got -4}}
  %y = "dist.all_reduce"(%x) {id = "ar", mesh = @tp, phase = "forward", lineage = "l", participants = array<i64: 0, 1>, reduction = "sum", message_bytes = 8 : i64, ops = -4 : i64} : (tensor<4xf16>) -> tensor<4xf16>
  return
}
