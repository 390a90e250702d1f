// RUN: blueprint-opt %s --split-input-file --verify-diagnostics
// One case per DistributedTaskIR verifier rule, in the custom form (the
// generic form where only it can state the case).

// expected-error @+1 {{'dist.mesh' op is in a module without a 'dist.header' (schema name and version)}}
dist.mesh @tp(axes = ["tp"], shape = [4])

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
// expected-error @+1 {{'dist.header' op is a second header; the first is at}}
dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"

// -----

// expected-error @+1 {{'dist.header' op expected schema_name 'blueprint.dist', but got 'blueprint.plan'}}
dist.header schema "blueprint.plan" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"

// -----

// expected-error @+1 {{'dist.header' op unsupported schema_version '1.x' (this build reads 1.x)}}
dist.header schema "blueprint.dist" version "1.x" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"

// -----

// expected-error @+1 {{'dist.header' op attribute 'model_digest' must be 'sha256:' followed by 64 lowercase hex digits, but got 'abc'}}
dist.header schema "blueprint.dist" version "1.0" model "abc"

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @duplicate_id(%x: tensor<4xf16>) {
  %a = dist.value "x" on @tp split [[]] {lineage = "x"} : tensor<4xf16>
  // expected-error @+1 {{'dist.all_reduce' op redefines id 'x' (first defined at}}
  %y = dist.all_reduce %x on @tp over [0, 1] reduction = sum phase = forward bytes = 8 {id = "x", lineage = "l"} : tensor<4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @forbidden_field(%t: !dist.token) {
  // expected-error @+1 {{'dist.compute' op attribute 'queue' is a placement or target field, illegal in the 'dist' layer}}
  %t1 = dist.compute "c" on @tp phase = forward vector gelu(%t : !dist.token) ops = 1 read = 2 write = 2 {lineage = "l", queue = 3 : i64} : !dist.token
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @reserved_semantic_field(%t: !dist.token) {
  // expected-error @+1 {{'dist.compute' op attribute 'user.info' nests field 'datatype', a placement or target field illegal in the 'dist' layer}}
  %t1 = dist.compute "c" on @tp phase = forward vector gelu(%t : !dist.token) ops = 1 read = 2 write = 2 {lineage = "l", user.info = {datatype = "float16"}} : !dist.token
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @target_library(%t: !dist.token) {
  // expected-error @+1 {{'dist.compute' op attribute 'lineage' names target 'nccl' in "nccl_allreduce"; the 'dist' layer is target-neutral}}
  %t1 = dist.compute "c" on @tp phase = forward vector gelu(%t : !dist.token) ops = 1 read = 2 write = 2 {lineage = "nccl_allreduce"} : !dist.token
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @unknown_attribute(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.p2p' op has unknown attribute 'priority' (not declared by 'dist.p2p')}}
  %y = dist.p2p %x on @tp from 0 to 1 phase = forward bytes = 8 {id = "p", lineage = "l", priority = 1 : i64} : tensor<4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @reduction_not_allowed(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.all_gather' op does not take a reduction (only all_reduce and reduce_scatter do)}}
  %y = dist.all_gather %x on @tp over [0, 1] phase = forward bytes = 8 {id = "ag", lineage = "l", reduction = 0 : i32} : tensor<4xf16> -> tensor<8xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @root_not_allowed(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.all_reduce' op does not take a root (only broadcast does)}}
  %y = dist.all_reduce %x on @tp over [0, 1] reduction = sum phase = forward bytes = 8 {id = "ar", lineage = "l", root = 0 : i64} : tensor<4xf16>
  return
}

// -----

// Rules ODS states are checked by the generated C++ verifiers and parsers.
dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @unknown_mesh() {
  // expected-error @+1 {{'dist.value' op 'mesh' @nowhere does not name a 'dist.mesh'}}
  %x = dist.value "x" on @nowhere split [[]] {lineage = "x"} : tensor<4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @mesh_names_a_function() -> index {
  // expected-error @+1 {{'dist.rank' op 'mesh' @mesh_names_a_function does not name a 'dist.mesh'}}
  %r = dist.rank on @mesh_names_a_function
  return %r : index
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
// expected-error @+1 {{redefinition of symbol named 'tp'}}
dist.mesh @tp(axes = ["tp"], shape = [4])

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @missing_id(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.all_reduce' op requires attribute 'id'}}
  %y = dist.all_reduce %x on @tp over [0, 1] reduction = sum phase = forward bytes = 8 {lineage = "l"} : tensor<4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @reduction_missing(%x: tensor<4xf16>) {
  // expected-error @+1 {{custom op 'dist.reduce_scatter' expected 'reduction'}}
  %y = dist.reduce_scatter %x on @tp over [0, 1] phase = forward bytes = 8 {id = "rs", lineage = "l"} : tensor<4xf16> -> tensor<2xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @reduction_missing_generic(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.reduce_scatter' op requires attribute 'reduction'}}
  %y = "dist.reduce_scatter"(%x) {id = "rs", mesh = @tp, phase = 0 : i32, lineage = "l", participants = array<i64: 0, 1>, message_bytes = 8 : i64} : (tensor<4xf16>) -> tensor<2xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @bad_reduction(%x: tensor<4xf16>) {
  // expected-error @+1 {{custom op 'dist.all_reduce' expected string or keyword containing one of the following enum values for attribute 'reduction' [sum, max, min, prod]}}
  %y = dist.all_reduce %x on @tp over [0, 1] reduction = avg phase = forward bytes = 8 {id = "ar", lineage = "l"} : tensor<4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @bad_phase(%x: tensor<4xf16>) {
  // expected-error @+1 {{custom op 'dist.all_reduce' expected string or keyword containing one of the following enum values for attribute 'phase' [forward, recompute, activation_gradient, weight_gradient, optimizer, recommunication, prefill, decode]}}
  %y = dist.all_reduce %x on @tp over [0, 1] reduction = sum phase = backward bytes = 8 {id = "ar", lineage = "l"} : tensor<4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @bad_phase_case(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.all_reduce' op attribute 'phase' failed to satisfy constraint: execution phase}}
  %y = "dist.all_reduce"(%x) {id = "ar", mesh = @tp, phase = 8 : i32, lineage = "l", participants = array<i64: 0, 1>, reduction = 0 : i32, message_bytes = 8 : i64} : (tensor<4xf16>) -> tensor<4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @bad_engine(%t: !dist.token) {
  // expected-error @+1 {{custom op 'dist.compute' expected string or keyword containing one of the following enum values for attribute 'engine' [matrix, vector]}}
  %t1 = dist.compute "c" on @tp phase = forward tensor_core gelu(%t : !dist.token) ops = 1 read = 2 write = 2 {lineage = "l"} : !dist.token
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
// expected-error @+1 {{custom op 'dist.memory' expected string or keyword containing one of the following enum values for attribute 'kind' [weight, activation_working, activation_storage, activation_checkpoint, weight_gradient, weight_gradient_unsharded, activation_gradient, optimizer_state, kv_cache, boundary_value]}}
dist.memory "m" on @tp registers = 1 {lineage = "b"}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
// expected-error @+1 {{'dist.memory' op attribute 'bytes' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
dist.memory "m" on @tp weight = -1 {lineage = "b"}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
// expected-error @+1 {{'dist.memory' op attribute 'shared_by' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
dist.memory "m" on @tp optimizer_state = 64 shared_by = 0 {lineage = "b"}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @negative_work(%t: !dist.token) {
  // expected-error @+1 {{'dist.compute' op attribute 'read_bytes' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %t1 = dist.compute "c" on @tp phase = forward vector gelu(%t : !dist.token) ops = 1 read = -2 write = 2 {lineage = "l"} : !dist.token
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @negative_message(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.broadcast' op attribute 'message_bytes' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %y = dist.broadcast %x on @tp over [0, 1] root = 0 phase = forward bytes = -8 {id = "bc", lineage = "l"} : tensor<4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @negative_local_work(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.all_reduce' op attribute 'ops' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %y = dist.all_reduce %x on @tp over [0, 1] reduction = sum phase = forward bytes = 8 {id = "ar", lineage = "l", ops = -4 : i64} : tensor<4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @split_axes_kind() {
  // expected-error @+1 {{'dist.value' op attribute 'split_axes' failed to satisfy constraint: per-dimension lists of mesh axis names}}
  %x = "dist.value"() {id = "x", mesh = @tp, split_axes = ["tp"], lineage = "x"} : () -> tensor<4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
func.func @team_kind(%l: tensor<?xi64>, %i: index) {
  // expected-error @+1 {{'dist.copy_reshape' op attribute 'team' failed to satisfy constraint: 64-bit signless integer attribute or flat symbol reference attribute}}
  %h, %o = dist.copy_reshape %l g_shape %i l_offs %i to n_g_shape %i n_offs %i n_shape %i {team = 1.0 : f32} : tensor<?xi64> -> tensor<?xi64>
  dist.wait %h
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @reshard_type(%x: tensor<4x4xf16>) {
  // expected-error @+1 {{'dist.reshard' op failed to verify that all of {input, result} have same type}}
  %y = "dist.reshard"(%x) {id = "r", mesh = @tp, phase = 0 : i32, lineage = "l", from_split_axes = [[], []], to_split_axes = [["tp"], []]} : (tensor<4x4xf16>) -> tensor<4x8xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @all_reduce_type(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.all_reduce' op failed to verify that all of {input, result} have same type}}
  %y = "dist.all_reduce"(%x) {id = "ar", mesh = @tp, phase = 0 : i32, lineage = "l", participants = array<i64: 0, 1>, reduction = 0 : i32, message_bytes = 8 : i64} : (tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @collective_deps_are_tokens(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.all_reduce' op operand #1 must be variadic of Dependency-only value ordering two tasks, but got 'tensor<4xf16>'}}
  %y = "dist.all_reduce"(%x, %x) {id = "ar", mesh = @tp, phase = 0 : i32, lineage = "l", participants = array<i64: 0, 1>, reduction = 0 : i32, message_bytes = 8 : i64} : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @wait_on_a_token(%t: !dist.token) {
  // expected-error @+1 {{'dist.wait' op operand #0 must be Opaque handle of an in-flight asynchronous operation, but got '!dist.token'}}
  "dist.wait"(%t) : (!dist.token) -> ()
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @rank_type() {
  // expected-error @+1 {{'dist.rank' op result #0 must be index, but got 'i32'}}
  %r = "dist.rank"() {mesh = @tp} : () -> i32
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [2, 2, 2])
func.func @yield_outside_chunk(%t: !dist.token) {
  // expected-error @+1 {{'dist.yield' op expects parent op 'dist.chunk'}}
  dist.yield %t : !dist.token
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [2, 2, 2])
// expected-error @+1 {{'dist.pipeline' op 'mesh' @nowhere does not name a 'dist.mesh'}}
dist.pipeline @step on @nowhere along "pp" schedule = gpipe stages = 2 chunks = 1 microbatches = 4 blocks = 8

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [2, 2, 2])
// expected-error @+1 {{custom op 'dist.pipeline' expected string or keyword containing one of the following enum values for attribute 'schedule' [one_f_one_b, interleaved_one_f_one_b, gpipe]}}
dist.pipeline @step on @world along "pp" schedule = zero_bubble stages = 2 chunks = 1 microbatches = 4 blocks = 8

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [2, 2, 2])
// expected-error @+1 {{'dist.pipeline' op attribute 'stages' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
dist.pipeline @step on @world along "pp" schedule = gpipe stages = 0 chunks = 1 microbatches = 4 blocks = 8

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [2, 2, 2])
dist.pipeline @step on @world along "pp" schedule = gpipe stages = 2 chunks = 1 microbatches = 4 blocks = 8
// expected-error @+1 {{'dist.chunk' op region #0 ('template') failed to verify constraint: region with 1 blocks}}
dist.chunk @c of @step stage = 0 chunk = 0 first_block = 0 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield %in : !dist.token
^bb1:
  dist.yield
} boundary {
  dist.yield
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [2, 2, 2])
dist.pipeline @step on @world along "pp" schedule = gpipe stages = 2 chunks = 1 microbatches = 4 blocks = 8
dist.chunk @c of @step stage = 0 chunk = 0 first_block = 0 blocks = 2 {
^bb0(%in: !dist.token):
  // expected-error @+1 {{block with no terminator}}
  %t = dist.compute "x" on @world phase = forward vector gelu(%in : !dist.token) ops = 1 read = 1 write = 1 {lineage = "l"} : !dist.token
} boundary {
  dist.yield
}

// -----

// The Rust verifiers: meshes, slices, ranks, shardings, collectives,
// point-to-point, copies and async waits.
dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
// expected-error @+1 {{'dist.mesh' op must have at least one axis}}
dist.mesh @m(axes = [], shape = [])

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
// expected-error @+1 {{'dist.mesh' op expected 2 axis sizes (one per axis), but got 1}}
dist.mesh @m(axes = ["a", "b"], shape = [4])

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
// expected-error @+1 {{'dist.mesh' op axis #1 has an empty name}}
dist.mesh @m(axes = ["a", ""], shape = [2, 2])

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
// expected-error @+1 {{'dist.mesh' op axis 'a' is named twice}}
dist.mesh @m(axes = ["a", "a"], shape = [2, 2])

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
// expected-error @+1 {{'dist.mesh' op axis #0 must have a positive size, but got 0}}
dist.mesh @m(axes = ["a"], shape = [0])

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
// expected-error @+1 {{'dist.mesh' op has more ranks than fit in 64 bits}}
dist.mesh @m(axes = ["a", "b"], shape = [4294967296, 4294967296])

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
// expected-error @+1 {{'dist.mesh' op has 33554432 ranks, but at most 2^24 = 16777216 are supported}}
dist.mesh @m(axes = ["a", "b"], shape = [8192, 4096])

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
// expected-error @+1 {{'dist.mesh' op symbol must not be empty}}
dist.mesh @""(axes = ["a"], shape = [2])

// -----

// A task on a mesh that breaks the mesh rules names it.
dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
// expected-error @+1 {{'dist.mesh' op axis #0 must have a positive size, but got -2}}
dist.mesh @m(axes = ["a"], shape = [-2])
func.func @invalid_mesh() {
  // expected-error @+1 {{'dist.value' op 'mesh' @m does not name a valid 'dist.mesh' in this module}}
  %x = dist.value "x" on @m split [[]] {lineage = "x"} : tensor<4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @empty_lineage() {
  // expected-error @+1 {{'dist.value' op lineage must name the ModelIR op or value this comes from}}
  %x = dist.value "x" on @tp split [[]] {lineage = ""} : tensor<4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [2, 2, 2])
func.func @slice_length(%t: !dist.token) {
  // expected-error @+1 {{'dist.compute' op 'slice' has 2 coordinates, but the mesh has 3 axes}}
  %t1 = dist.compute "c" on @world slice [0, 1] phase = forward vector gelu(%t : !dist.token) ops = 1 read = 2 write = 2 {lineage = "l"} : !dist.token
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [2, 2, 2])
func.func @slice_coordinate(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.all_reduce' op 'slice' coordinate 2 on axis 'pp' is outside 0..1 (or -1 for every coordinate)}}
  %y = dist.all_reduce %x on @world slice [-1, 2, 0] axes ["dp"] reduction = sum phase = forward bytes = 8 {id = "ar", lineage = "l"} : tensor<4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [2, 2, 2])
// expected-error @+1 {{'dist.memory' op 'slice' coordinate -2 on axis 'dp' is outside 0..1 (or -1 for every coordinate)}}
dist.memory "m" on @world slice [-2, 0, 0] weight = 64 {lineage = "b"}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @owner_outside() {
  // expected-error @+1 {{'dist.value' op owner 4 is outside the mesh (ranks 0..3)}}
  %x = dist.value "x" on @tp split [[]] owners [0, 4] {lineage = "x"} : tensor<4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @owner_twice() {
  // expected-error @+1 {{'dist.value' op owner 1 appears more than once in 'owners'}}
  %x = dist.value "x" on @tp split [[]] owners [1, 1] {lineage = "x"} : tensor<4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @owners_empty() {
  // expected-error @+1 {{'dist.value' op 'owners' must not be empty}}
  %x = dist.value "x" on @tp split [[]] owners [] {lineage = "x"} : tensor<4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @compute_ranks(%t: !dist.token) {
  // expected-error @+1 {{'dist.compute' op rank -1 is outside the mesh (ranks 0..3)}}
  %t1 = dist.compute "c" on @tp ranks [-1] phase = forward vector gelu(%t : !dist.token) ops = 1 read = 2 write = 2 {lineage = "l"} : !dist.token
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @sharding_rank() {
  // expected-error @+1 {{'dist.value' op 'split_axes' has 1 entries, but the value has rank 2}}
  %x = dist.value "x" on @tp split [["tp"]] {lineage = "x"} : tensor<4x4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @sharding_axis() {
  // expected-error @+1 {{'dist.value' op 'split_axes' names 'dp', which is not an axis of the mesh}}
  %x = dist.value "x" on @tp split [["dp"], []] {lineage = "x"} : tensor<4x4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @sharding_axis_twice() {
  // expected-error @+1 {{'dist.value' op 'split_axes' uses mesh axis 'tp' more than once}}
  %x = dist.value "x" on @tp split [["tp"], ["tp"]] {lineage = "x"} : tensor<4x4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @sharding_uneven() {
  %x = dist.value "x" on @tp split [[], []] {lineage = "x"} : tensor<6x4xf16>
  // expected-error @+1 {{'dist.output' op dimension 0 of size 6 cannot be split evenly over 4 ranks ('split_axes' = ["tp"])}}
  dist.output %x "y" on @tp split [["tp"], []] {lineage = "y"} : tensor<6x4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @reshard_sharding(%x: tensor<4x4xf16>) {
  // expected-error @+1 {{'dist.reshard' op 'to_split_axes' has 1 entries, but the value has rank 2}}
  %y = dist.reshard %x "r" on @tp phase = forward from [[], []] to [["tp"]] {lineage = "l"} : tensor<4x4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @reshard_from_sharding(%x: tensor<6x4xf16>) {
  // expected-error @+1 {{'dist.reshard' op dimension 0 of size 6 cannot be split evenly over 4 ranks ('from_split_axes' = ["tp"])}}
  %y = dist.reshard %x "r" on @tp phase = forward from [["tp"], []] to [[], []] {lineage = "l"} : tensor<6x4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @participants_empty(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.all_reduce' op 'participants' must not be empty}}
  %y = dist.all_reduce %x on @tp over [] reduction = sum phase = forward bytes = 8 {id = "ar", lineage = "l"} : tensor<4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @participant_outside(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.all_reduce' op participant 7 is outside the mesh (ranks 0..3)}}
  %y = dist.all_reduce %x on @tp over [0, 7] reduction = sum phase = forward bytes = 8 {id = "ar", lineage = "l"} : tensor<4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @participant_twice(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.all_to_all' op participant 2 appears more than once in 'participants'}}
  %y = dist.all_to_all %x on @tp over [2, 2] phase = forward bytes = 8 {id = "a2a", lineage = "l"} : tensor<4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @no_group(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.all_reduce' op needs its group: explicit 'participants' (over [...]) or the mesh 'axes' it spans}}
  %y = dist.all_reduce %x on @tp reduction = sum phase = forward bytes = 8 {id = "ar", lineage = "l"} : tensor<4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [2, 2, 2])
func.func @group_axis(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.all_reduce' op 'axes' names 'ep', which is not an axis of the mesh}}
  %y = dist.all_reduce %x on @world axes ["dp", "ep"] reduction = sum phase = forward bytes = 8 {id = "ar", lineage = "l"} : tensor<4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @group_axes_empty(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.all_reduce' op 'axes' must name at least one mesh axis}}
  %y = dist.all_reduce %x on @tp axes [] reduction = sum phase = forward bytes = 8 {id = "ar", lineage = "l"} : tensor<4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @root_outside(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.broadcast' op root 3 is not one of the participants}}
  %y = dist.broadcast %x on @tp over [0, 1] root = 3 phase = forward bytes = 8 {id = "bc", lineage = "l"} : tensor<4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @reduce_scatter_shape(%x: tensor<8x4xf16>) {
  // expected-error @+1 {{'dist.reduce_scatter' op expected result dimension 0 to be 4, but got 8}}
  %y = dist.reduce_scatter %x on @tp over [0, 1] reduction = sum phase = forward bytes = 64 {id = "rs", lineage = "l"} : tensor<8x4xf16> -> tensor<8x4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [2, 2, 2])
func.func @reduce_scatter_axes_shape(%x: tensor<8x4xf16>) {
  // The group spans dp and tp: 4 ranks.
  // expected-error @+1 {{'dist.reduce_scatter' op expected result dimension 1 to be 1, but got 2}}
  %y = dist.reduce_scatter %x on @world axes ["dp", "tp"] reduction = sum phase = forward bytes = 64 {axis = 1 : i64, id = "rs", lineage = "l"} : tensor<8x4xf16> -> tensor<8x2xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @reduce_scatter_uneven(%x: tensor<6x4xf16>) {
  // expected-error @+1 {{'dist.reduce_scatter' op dimension 0 of size 6 cannot be scattered over 4 participants}}
  %y = dist.reduce_scatter %x on @tp over [0, 1, 2, 3] reduction = sum phase = forward bytes = 48 {id = "rs", lineage = "l"} : tensor<6x4xf16> -> tensor<1x4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @all_gather_axis(%x: tensor<8x4xf16>) {
  // expected-error @+1 {{'dist.all_gather' op axis 2 is not a dimension of both input (tensor<8x4xf16>) and result (tensor<16x4xf16>)}}
  %y = dist.all_gather %x on @tp over [0, 1] phase = forward bytes = 64 {axis = 2 : i64, id = "ag", lineage = "l"} : tensor<8x4xf16> -> tensor<16x4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @all_gather_element_type(%x: tensor<4x4xf16>) {
  // expected-error @+1 {{'dist.all_gather' op result element type must match the input's}}
  %y = dist.all_gather %x on @tp over [0, 1] phase = forward bytes = 8 {id = "ag", lineage = "l"} : tensor<4x4xf16> -> tensor<8x4xf32>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @all_gather_overflow(%x: tensor<4611686018427387904xi8>) {
  // expected-error @+1 {{'dist.all_gather' op dimension 0 of size 4611686018427387904 gathered over 4 participants does not fit in 64 bits}}
  %y = dist.all_gather %x on @tp over [0, 1, 2, 3] phase = forward bytes = 8 {id = "ag", lineage = "l"} : tensor<4611686018427387904xi8> -> tensor<8xi8>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @all_gather_token(%t: !dist.token) {
  // expected-error @+1 {{'dist.all_gather_start' op result type tensor<8xf16> must be the gathered or scattered input type !dist.token}}
  %h, %y = dist.all_gather_start %t on @tp over [0, 1] phase = forward bytes = 8 {id = "ag", lineage = "l"} : !dist.token -> tensor<8xf16>
  dist.wait %h
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @p2p_same_rank(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.p2p' op source and dest must differ, but both are 2}}
  %y = dist.p2p %x on @tp from 2 to 2 phase = forward bytes = 8 {id = "p", lineage = "l"} : tensor<4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @p2p_outside(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.p2p' op dest 4 is outside the mesh (ranks 0..3)}}
  %y = dist.p2p %x on @tp from 0 to 4 phase = forward bytes = 8 {id = "p", lineage = "l"} : tensor<4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @p2p_source_outside(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.p2p' op source -1 is outside the mesh (ranks 0..3)}}
  %y = dist.p2p %x on @tp from -1 to 1 phase = forward bytes = 8 {id = "p", lineage = "l"} : tensor<4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [2, 2, 2])
func.func @p2p_along_axis(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.p2p' op 'along' names 'ep', which is not an axis of the mesh}}
  %y = dist.p2p %x on @world along "ep" from 0 to 1 phase = forward bytes = 8 {id = "p", lineage = "l"} : tensor<4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [2, 2, 2])
func.func @p2p_along_coordinate(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.p2p_start' op dest coordinate 2 is outside axis 'pp' (0..1)}}
  %h, %y = dist.p2p_start %x on @world slice [0, -1, 1] along "pp" from 0 to 2 phase = forward bytes = 8 {id = "p", lineage = "l"} : tensor<4xf16>
  dist.wait %h
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [2, 2, 2])
func.func @p2p_along_same(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.p2p' op source and dest must differ, but both are 1}}
  %y = dist.p2p %x on @world along "tp" from 1 to 1 phase = forward bytes = 8 {id = "p", lineage = "l"} : tensor<4xf16>
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @never_waited(%x: tensor<4xf16>) -> tensor<4xf16> {
  // expected-error @+1 {{'dist.all_reduce_start' op async handle is never waited on ('dist.wait' missing)}}
  %h, %y = dist.all_reduce_start %x on @tp over [0, 1] reduction = sum phase = forward bytes = 8 {id = "ar", lineage = "l"} : tensor<4xf16>
  return %y : tensor<4xf16>
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @waited_twice(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.all_gather_start' op async handle is waited 2 times; it must be waited exactly once}}
  %h, %y = dist.all_gather_start %x on @tp over [0, 1] phase = forward bytes = 8 {id = "ag", lineage = "l"} : tensor<4xf16> -> tensor<8xf16>
  dist.wait %h
  dist.wait %h
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func private @consume(!dist.async_handle)
func.func @handle_escapes(%x: tensor<4xf16>) {
  // expected-error @+1 {{'dist.p2p_start' op async handle may only be used by 'dist.wait', but is used by 'func.call'}}
  %h, %y = dist.p2p_start %x on @tp from 0 to 1 phase = forward bytes = 8 {id = "p", lineage = "l"} : tensor<4xf16>
  func.call @consume(%h) : (!dist.async_handle) -> ()
  dist.wait %h
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @use_before_wait(%x: tensor<4xf16>) -> tensor<4xf16> {
  %h, %y = dist.all_reduce_start %x on @tp over [0, 1] reduction = sum phase = forward bytes = 8 {id = "ar", lineage = "l"} : tensor<4xf16>
  // expected-error @+1 {{'arith.addf' op uses the result of 'dist.all_reduce_start' before the 'dist.wait' on its handle}}
  %z = arith.addf %y, %y : tensor<4xf16>
  dist.wait %h
  return %z : tensor<4xf16>
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @wait_in_branch(%x: tensor<4xf16>, %c: i1) -> tensor<4xf16> {
  %h, %y = dist.broadcast_start %x on @tp over [0, 1] root = 0 phase = forward bytes = 8 {id = "bc", lineage = "l"} : tensor<4xf16>
  scf.if %c {
    dist.wait %h
  }
  // expected-error @+1 {{'func.return' op uses the result of 'dist.broadcast_start' before the 'dist.wait' on its handle}}
  return %y : tensor<4xf16>
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
func.func @copy_never_waited(%l: tensor<4xi64>, %i: index) -> tensor<4xi64> {
  // expected-error @+1 {{'dist.copy_reshape' op async handle is never waited on ('dist.wait' missing)}}
  %h, %o = dist.copy_reshape %l g_shape %i l_offs %i to n_g_shape %i n_offs %i n_shape %i {team = 1 : i64} : tensor<4xi64> -> tensor<4xi64>
  return %o : tensor<4xi64>
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
func.func @reshape_segments(%l: tensor<?x?xi64>, %i: index) {
  // expected-error @+1 {{'dist.copy_reshape' op expected 2 'l_offsets' operands (the input rank), but got 1}}
  %h, %o = dist.copy_reshape %l g_shape %i, %i l_offs %i to n_g_shape %i n_offs %i n_shape %i {team = 1 : i64} : tensor<?x?xi64> -> tensor<?xi64>
  dist.wait %h
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
func.func @reshape_result_segments(%l: tensor<?xi64>, %i: index) {
  // expected-error @+1 {{'dist.copy_reshape' op expected 2 'nl_shape' operands (the result rank), but got 1}}
  %h, %o = dist.copy_reshape %l g_shape %i l_offs %i to n_g_shape %i, %i n_offs %i, %i n_shape %i {team = 1 : i64} : tensor<?xi64> -> tensor<?x?xi64>
  dist.wait %h
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
func.func @reshape_element_type(%l: tensor<?x?xi64>, %i: index) {
  // expected-error @+1 {{'dist.copy_reshape' op result element type must match the input's}}
  %h, %o = dist.copy_reshape %l g_shape %i, %i l_offs %i, %i to n_g_shape %i n_offs %i n_shape %i {team = 1 : i64} : tensor<?x?xi64> -> tensor<?xf32>
  dist.wait %h
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
func.func @permute_axes(%l: tensor<?x?xi64>, %i: index) {
  // expected-error @+1 {{'dist.copy_permute' op 'axes' [1, 1] must be a permutation of 0..2}}
  %h, %o = dist.copy_permute %l g_shape %i, %i l_offs %i, %i n_offs %i, %i n_shape %i, %i axes [1, 1] {team = 1 : i64} : tensor<?x?xi64> -> tensor<?x?xi64>
  dist.wait %h
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
func.func @permute_rank(%l: tensor<?x?xi64>, %i: index) {
  // expected-error @+1 {{'dist.copy_permute' op a permutation keeps the rank, but input has rank 2 and result 1}}
  %h, %o = dist.copy_permute %l g_shape %i, %i l_offs %i, %i n_offs %i n_shape %i axes [1, 0] {team = 1 : i64} : tensor<?x?xi64> -> tensor<?xi64>
  dist.wait %h
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
func.func @team_symbol(%l: tensor<?xi64>, %i: index) {
  // expected-error @+1 {{'dist.copy_reshape' op 'team' @nowhere does not name a valid 'dist.mesh' in this module}}
  %h, %o = dist.copy_reshape %l g_shape %i l_offs %i to n_g_shape %i n_offs %i n_shape %i {team = @nowhere} : tensor<?xi64> -> tensor<?xi64>
  dist.wait %h
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @tiling0(%a: !dist.token) {
  %t = dist.compute "fw.mm" on @tp phase = forward matrix matmul(%a : !dist.token) ops = 64 read = 32 write = 16 {lineage = "mm"} : !dist.token
  %g = dist.compute "fw.gelu" on @tp phase = forward vector gelu(%t : !dist.token) ops = 64 read = 32 write = 16 {lineage = "gelu"} : !dist.token
  // expected-error @+1 {{'dist.all_reduce' op a tiled collective states 'tiled_with', 'tiles' and 'overlap' together, but 'tiles', 'overlap' is missing}}
  %r = dist.all_reduce %t on @tp over [0, 1, 2, 3] reduction = sum tiled_with "fw.mm" phase = forward bytes = 64 {id = "fw.ar", lineage = "mm"} : !dist.token
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @tiling1(%a: !dist.token) {
  %t = dist.compute "fw.mm" on @tp phase = forward matrix matmul(%a : !dist.token) ops = 64 read = 32 write = 16 {lineage = "mm"} : !dist.token
  %g = dist.compute "fw.gelu" on @tp phase = forward vector gelu(%t : !dist.token) ops = 64 read = 32 write = 16 {lineage = "gelu"} : !dist.token
  // expected-error @+1 {{'dist.all_reduce' op 'tiled_with' names 'fw.none', which is no compute task of this program}}
  %r = dist.all_reduce %t on @tp over [0, 1, 2, 3] reduction = sum tiled_with "fw.none" tiles = 4 overlap = ring phase = forward bytes = 64 {id = "fw.ar", lineage = "mm"} : !dist.token
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @tiling2(%a: !dist.token) {
  %t = dist.compute "fw.mm" on @tp phase = forward matrix matmul(%a : !dist.token) ops = 64 read = 32 write = 16 {lineage = "mm"} : !dist.token
  %g = dist.compute "fw.gelu" on @tp phase = forward vector gelu(%t : !dist.token) ops = 64 read = 32 write = 16 {lineage = "gelu"} : !dist.token
  // expected-error @+1 {{'dist.all_reduce' op 'tiled_with' must name a matmul task, but 'fw.gelu' is not one}}
  %r = dist.all_reduce %t on @tp over [0, 1, 2, 3] reduction = sum tiled_with "fw.gelu" tiles = 4 overlap = ring phase = forward bytes = 64 {id = "fw.ar", lineage = "mm"} : !dist.token
  return
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @tiling3(%a: !dist.token) {
  %t = dist.compute "fw.mm" on @tp phase = forward matrix matmul(%a : !dist.token) ops = 64 read = 32 write = 16 {lineage = "mm"} : !dist.token
  %g = dist.compute "fw.gelu" on @tp phase = forward vector gelu(%t : !dist.token) ops = 64 read = 32 write = 16 {lineage = "gelu"} : !dist.token
  // expected-error @+1 {{'dist.all_gather' op in phase 'recommunication' it overlaps a linear in phase 'weight_gradient', but 'fw.mm' is in phase 'forward'}}
  %r = dist.all_gather %t on @tp over [0, 1, 2, 3] tiled_with "fw.mm" tiles = 4 overlap = ring phase = recommunication bytes = 64 {id = "re.ag", lineage = "mm"} : !dist.token -> !dist.token
  return
}
