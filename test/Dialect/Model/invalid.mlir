// RUN: blueprint-opt %s --split-input-file --verify-diagnostics
// One case per ModelIR verifier rule, in the custom form.

func.func @no_header() {
  // expected-error @+1 {{'model.value' op is in a module without a 'model.header' (schema name and version)}}
  %x = model.value "x" input : tensor<4xf16>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
// expected-error @+1 {{'model.header' op is a second header; the first is at}}
model.header schema "blueprint.model" version "1.0"

// -----

func.func @header_in_function() {
  // expected-error @+1 {{'model.header' op must be at module scope}}
  model.header schema "blueprint.model" version "1.0"
  return
}

// -----

// expected-error @+1 {{'model.header' op expected schema_name 'blueprint.model', but got 'blueprint.dist'}}
model.header schema "blueprint.dist" version "1.0"

// -----

// expected-error @+1 {{'model.header' op unsupported schema_version '2.0' (this build reads 1.x)}}
model.header schema "blueprint.model" version "2.0"

// -----

// expected-error @+1 {{'model.header' op unsupported schema_version '1' (this build reads 1.x)}}
model.header schema "blueprint.model" version "1"

// -----

model.header schema "blueprint.model" version "1.0"
func.func @duplicate_id() {
  %x = model.value "x" input : tensor<4xf16>
  // expected-error @+1 {{'model.value' op redefines id 'x' (first defined at}}
  %y = model.value "x" input : tensor<4xf16>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @empty_id() {
  // expected-error @+1 {{'model.value' op id must not be empty}}
  %x = model.value "" input : tensor<4xf16>
  return
}

// -----

// Symbols are unique in a layer, also where MLIR's symbol table does not
// look (inside a function); `sym_name` is not an attribute of the op either.
model.header schema "blueprint.model" version "1.0"
func.func @duplicate_symbol() {
  // expected-error @+1 {{'model.value' op has unknown attribute 'sym_name' (not declared by 'model.value')}}
  %x = model.value "x" input {sym_name = "a"} : tensor<4xf16>
  // expected-error @+2 {{'model.value' op has unknown attribute 'sym_name' (not declared by 'model.value')}}
  // expected-error @+1 {{'model.value' op redefines symbol 'a' (first defined at}}
  %y = model.value "y" input {sym_name = "a"} : tensor<4xf16>
  return
}

// -----

// Rules ODS states are checked by the generated C++ verifier and parser.
model.header schema "blueprint.model" version "1.0"
func.func @missing_attribute() {
  // expected-error @+1 {{'model.value' op requires attribute 'role'}}
  %x = "model.value"() {id = "x"} : () -> tensor<4xf16>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @bad_role() {
  // expected-error @+1 {{custom op 'model.value' expected string or keyword containing one of the following enum values for attribute 'role' [parameter, activation, activation_gradient, weight_gradient, optimizer_state, kv_cache, input]}}
  %x = model.value "x" weights : tensor<4xf16>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @bad_role_case() {
  // expected-error @+1 {{'model.value' op attribute 'role' failed to satisfy constraint: state role of a ModelIR value}}
  %x = "model.value"() {id = "x", role = 7 : i32} : () -> tensor<4xf16>
  return
}

// -----

// The old string spelling of a case is not an enum attribute.
model.header schema "blueprint.model" version "1.0"
func.func @role_as_string() {
  // expected-error @+1 {{'model.value' op attribute 'role' failed to satisfy constraint: state role of a ModelIR value}}
  %x = "model.value"() {id = "x", role = "input"} : () -> tensor<4xf16>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @id_not_a_string() {
  // expected-error @+1 {{'model.value' op attribute 'id' failed to satisfy constraint: string attribute}}
  %x = "model.value"() {id = 3 : i64, role = 6 : i32} : () -> tensor<4xf16>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @wrong_operand_type(%i: index) {
  %w = model.value "w" parameter : tensor<4x4xf16>
  // expected-error @+1 {{'model.matmul' op operand #0 must be ranked tensor of any type values, but got 'index'}}
  %y = model.matmul "mm"(%i, %w) : (index, tensor<4x4xf16>) -> tensor<4x4xf16>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @unknown_effect() {
  // expected-error @+1 {{custom op 'model.value' expected string or keyword containing one of the following enum values for attribute 'effects' [none, parameter_update, random_state, mutation, allocation, external_call]}}
  %x = model.value "x" input effects(teleport) : tensor<4xf16>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @unknown_effect_bit() {
  // expected-error @+1 {{'model.value' op attribute 'effects' failed to satisfy constraint: typed effects}}
  %x = "model.value"() {id = "x", role = 6 : i32, effects = 64 : i32} : () -> tensor<4xf16>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @output_role() {
  %x = model.value "x" input : tensor<4xf16>
  // expected-error @+1 {{custom op 'model.output' expected string or keyword containing one of the following enum values for attribute 'role' [parameter, activation, activation_gradient, weight_gradient, optimizer_state, kv_cache, input]}}
  model.output %x "out" as cache : tensor<4xf16>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @negative_dim() {
  %x = model.value "x" input : tensor<8x16xf16>
  // expected-error @+1 {{'model.softmax' op attribute 'dim' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %y = model.softmax "sm"(%x) dim = -1 : (tensor<8x16xf16>) -> tensor<8x16xf16>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @zero_hidden() {
  %x = model.value "x" activation : tensor<1x8x4xf16>
  %p = model.value "p" parameter : tensor<4xf16>
  %o = model.value "o" optimizer_state : tensor<4xf32>
  // expected-error @+1 {{'model.decoder_training' op attribute 'hidden' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %y = model.decoder_training "block"(%x) norm1(%p, %p) attention(%p, %p, %p, %p) norm2(%p, %p) mlp(%p, %p) state(%o) datatype = float16 effects(parameter_update) {hidden = 0 : i64, ffn_hidden = 16 : i64, seq_len = 8 : i64, heads = 1 : i64, head_dim = 4 : i64, microbatch = 1 : i64} : (tensor<1x8x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf32>) -> tensor<1x8x4xf16>
  return
}

// -----

// The Rust verifiers: attributes, layering, dataflow, effects, shapes.
model.header schema "blueprint.model" version "1.0"
func.func @unknown_attribute() {
  // expected-error @+1 {{'model.value' op has unknown attribute 'color' (not declared by 'model.value')}}
  %x = model.value "x" input {color = "red"} : tensor<4xf16>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @placement_in_model() {
  // expected-error @+1 {{'model.value' op attribute 'tp' is a placement or target field, illegal in the 'model' layer}}
  %x = model.value "x" input {tp = 8 : i64} : tensor<4xf16>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @nested_target_field() {
  // expected-error @+1 {{'model.value' op attribute 'user.hints' nests field 'kernel', a placement or target field illegal in the 'model' layer}}
  %x = model.value "x" input {user.hints = {kernel = "gemm_128"}} : tensor<4xf16>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @target_name() {
  // expected-error @+1 {{'model.value' op attribute 'id' names target 'cublas' in "cublas.gemm"; the 'model' layer is target-neutral}}
  %x = model.value "cublas.gemm" input : tensor<4xf16>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @target_dialect() {
  %x = model.value "x" input : tensor<4xf16>
  // expected-error @+1 {{'gpu.barrier' op belongs to target dialect 'gpu', which is not allowed beside target-neutral Blueprint IR}}
  gpu.barrier
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @not_a_model_value(%x: tensor<4x4xf16>) {
  %w = model.value "w" parameter : tensor<4x4xf16>
  // expected-error @+1 {{'model.matmul' op operand #0 is not defined by a ModelIR op (values enter ModelIR through 'model.value')}}
  %y = model.matmul "mm"(%x, %w) : (tensor<4x4xf16>, tensor<4x4xf16>) -> tensor<4x4xf16>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @dropout_without_random_state() {
  %x = model.value "x" input : tensor<4xf16>
  // expected-error @+1 {{'model.dropout' op must declare effect 'random_state' in 'effects'}}
  %y = model.dropout "drop"(%x) p = 0.0 : (tensor<4xf16>) -> tensor<4xf16>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @dropout_wrong_effect() {
  %x = model.value "x" input : tensor<4xf16>
  // expected-error @+1 {{'model.dropout' op must declare effect 'random_state' in 'effects'}}
  %y = model.dropout "drop"(%x) p = 0.0 effects(mutation) : (tensor<4xf16>) -> tensor<4xf16>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @optimizer_without_update() {
  %w = model.value "w" parameter : tensor<4xf16>
  %g = model.value "g" weight_gradient : tensor<4xf16>
  %m = model.value "m" optimizer_state : tensor<4xf32>
  // expected-error @+1 {{'model.optimizer_step' op must declare effect 'parameter_update' in 'effects'}}
  %w1, %m1 = model.optimizer_step "sgd"(%w, %g, %m) sgd lr = 0.1 : (tensor<4xf16>, tensor<4xf16>, tensor<4xf32>) -> (tensor<4xf16>, tensor<4xf32>)
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @training_without_update() {
  %x = model.value "x" activation : tensor<1x8x4xf16>
  %p = model.value "p" parameter : tensor<4xf16>
  %o = model.value "o" optimizer_state : tensor<4xf32>
  // expected-error @+1 {{'model.decoder_training' op must declare effect 'parameter_update' in 'effects'}}
  %y = model.decoder_training "block"(%x) norm1(%p, %p) attention(%p, %p, %p, %p) norm2(%p, %p) mlp(%p, %p) state(%o) datatype = float16 effects(random_state) {hidden = 4 : i64, ffn_hidden = 16 : i64, seq_len = 8 : i64, heads = 1 : i64, head_dim = 4 : i64, microbatch = 1 : i64} : (tensor<1x8x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf32>) -> tensor<1x8x4xf16>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @inference_without_mutation() {
  %x = model.value "x" input : tensor<1x4x4xf16>
  %p = model.value "p" parameter : tensor<4xf16>
  // expected-error @+1 {{'model.decoder_inference' op must declare effect 'mutation' in 'effects'}}
  %y, %kv1 = model.decoder_inference "prefill" prefill(%x, %p, %p, %p, %p, %p, %p, %p, %p, %p, %p) datatype = float16 kv_datatype = float16 {hidden = 4 : i64, ffn_hidden = 16 : i64, heads = 2 : i64, kv_heads = 2 : i64, head_dim = 2 : i64, batch = 1 : i64, query_tokens = 4 : i64, context_tokens = 4 : i64} : (tensor<1x4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>) -> (tensor<1x4x4xf16>, tensor<2x1x4x4xf16>)
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @append_without_mutation() {
  %kv0 = model.value "kv" kv_cache : tensor<2x1x?x8xf16>
  %k = model.value "k" activation : tensor<1x4x8xf16>
  // expected-error @+1 {{'model.kv_append' op must declare effect 'mutation' in 'effects'}}
  %kv = model.kv_append "kv.next"(%k, %k) cache(%kv0 : tensor<2x1x?x8xf16>) : (tensor<1x4x8xf16>, tensor<1x4x8xf16>) -> tensor<2x1x?x8xf16>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @optimizer_state_count() {
  %w = model.value "w" parameter : tensor<4xf16>
  %g = model.value "g" weight_gradient : tensor<4xf16>
  %m = model.value "m" optimizer_state : tensor<4xf32>
  // expected-error @+1 {{'model.optimizer_step' op expected 1 new_state results (one per state operand), but got 0}}
  %w1 = model.optimizer_step "adam"(%w, %g, %m) sgd lr = 0.1 effects(parameter_update) : (tensor<4xf16>, tensor<4xf16>, tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @optimizer_param_type() {
  %w = model.value "w" parameter : tensor<4xf16>
  %g = model.value "g" weight_gradient : tensor<4xf16>
  %m = model.value "m" optimizer_state : tensor<4xf32>
  // expected-error @+1 {{'model.optimizer_step' op new_param must have the parameter's type}}
  %w1, %m1 = model.optimizer_step "sgd"(%w, %g, %m) sgd lr = 0.1 effects(parameter_update) : (tensor<4xf16>, tensor<4xf16>, tensor<4xf32>) -> (tensor<8xf16>, tensor<4xf32>)
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @fork_type() {
  %x = model.value "x" input : tensor<4xf16>
  // expected-error @+2 {{'model.fork' op result #0 has type tensor<8xf16>, but the input has type tensor<4xf16>}}
  // expected-error @+1 {{'model.fork' op result #1 has type tensor<8xf16>, but the input has type tensor<4xf16>}}
  %a, %b = model.fork "f"(%x) : (tensor<4xf16>) -> (tensor<8xf16>, tensor<8xf16>)
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @matmul_contraction() {
  %x = model.value "x" input : tensor<8x16xf16>
  %w = model.value "w" parameter : tensor<32x4xf16>
  // expected-error @+1 {{'model.matmul' op contraction dimension mismatch: input has 16, weight has 32}}
  %y = model.matmul "mm"(%x, %w) : (tensor<8x16xf16>, tensor<32x4xf16>) -> tensor<8x4xf16>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @matmul_result() {
  %x = model.value "x" input : tensor<8x16xf16>
  %w = model.value "w" parameter : tensor<16x4xf16>
  // expected-error @+1 {{'model.matmul' op result type tensor<8x5xf16> does not match input and weight shapes}}
  %y = model.matmul "mm"(%x, %w) : (tensor<8x16xf16>, tensor<16x4xf16>) -> tensor<8x5xf16>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @matmul_rank() {
  %x = model.value "x" input : tensor<8x16xf16>
  %w = model.value "w" parameter : tensor<2x16x4xf16>
  // expected-error @+1 {{'model.matmul' op expects a weight of rank 2 and an input of rank at least 1, but got ranks 2 and 3}}
  %y = model.matmul "mm"(%x, %w) : (tensor<8x16xf16>, tensor<2x16x4xf16>) -> tensor<8x4xf16>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @prefill_context() {
  %x = model.value "x" input : tensor<1x8x4xf16>
  %p = model.value "p" parameter : tensor<4xf16>
  // expected-error @+1 {{'model.decoder_inference' op prefill must have context_tokens equal to query_tokens (8), but got 9}}
  %y, %kv = model.decoder_inference "prefill" prefill(%x, %p, %p, %p, %p, %p, %p, %p, %p, %p, %p) datatype = float16 kv_datatype = float16 effects(mutation) {hidden = 4 : i64, ffn_hidden = 16 : i64, heads = 2 : i64, kv_heads = 2 : i64, head_dim = 2 : i64, batch = 1 : i64, query_tokens = 8 : i64, context_tokens = 9 : i64} : (tensor<1x8x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>) -> (tensor<1x8x4xf16>, tensor<2x1x8x4xf16>)
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @decode_context() {
  %x = model.value "x" input : tensor<1x2x4xf16>
  %p = model.value "p" parameter : tensor<4xf16>
  %kv = model.value "kv" kv_cache : tensor<2x1x1x4xf16>
  // expected-error @+1 {{'model.decoder_inference' op decode must attend over at least its query_tokens (2), but context_tokens is 1}}
  %y, %kv1 = model.decoder_inference "decode" decode(%x, %p, %p, %p, %p, %p, %p, %p, %p, %p, %p, %kv) datatype = float16 kv_datatype = float16 effects(mutation) {hidden = 4 : i64, ffn_hidden = 16 : i64, heads = 2 : i64, kv_heads = 2 : i64, head_dim = 2 : i64, batch = 1 : i64, query_tokens = 2 : i64, context_tokens = 1 : i64} : (tensor<1x2x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<2x1x1x4xf16>) -> (tensor<1x2x4xf16>, tensor<2x1x3x4xf16>)
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @decode_without_cache() {
  %x = model.value "x" input : tensor<1x1x4xf16>
  %p = model.value "p" parameter : tensor<4xf16>
  // expected-error @+1 {{'model.decoder_inference' op decode reads the KV cache, so it must take the 'kv_cache' operand}}
  %y, %kv1 = model.decoder_inference "decode" decode(%x, %p, %p, %p, %p, %p, %p, %p, %p, %p, %p) datatype = float16 kv_datatype = float16 effects(mutation) {hidden = 4 : i64, ffn_hidden = 16 : i64, heads = 2 : i64, kv_heads = 2 : i64, head_dim = 2 : i64, batch = 1 : i64, query_tokens = 1 : i64, context_tokens = 5 : i64} : (tensor<1x1x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>) -> (tensor<1x1x4xf16>, tensor<2x1x5x4xf16>)
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @prefill_with_cache() {
  %x = model.value "x" input : tensor<1x4x4xf16>
  %p = model.value "p" parameter : tensor<4xf16>
  %kv = model.value "kv" kv_cache : tensor<2x1x4x4xf16>
  // expected-error @+1 {{'model.decoder_inference' op prefill writes a fresh KV cache and must not take a 'kv_cache' operand}}
  %y, %kv1 = model.decoder_inference "prefill" prefill(%x, %p, %p, %p, %p, %p, %p, %p, %p, %p, %p, %kv) datatype = float16 kv_datatype = float16 effects(mutation) {hidden = 4 : i64, ffn_hidden = 16 : i64, heads = 2 : i64, kv_heads = 2 : i64, head_dim = 2 : i64, batch = 1 : i64, query_tokens = 4 : i64, context_tokens = 4 : i64} : (tensor<1x4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<2x1x4x4xf16>) -> (tensor<1x4x4xf16>, tensor<2x1x4x4xf16>)
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @kv_heads() {
  %x = model.value "x" input : tensor<1x4x4xf16>
  %p = model.value "p" parameter : tensor<4xf16>
  // expected-error @+1 {{'model.decoder_inference' op kv_heads (3) must divide heads (4)}}
  %y, %kv1 = model.decoder_inference "prefill" prefill(%x, %p, %p, %p, %p, %p, %p, %p, %p, %p, %p) datatype = float16 kv_datatype = float16 effects(mutation) {hidden = 4 : i64, ffn_hidden = 16 : i64, heads = 4 : i64, kv_heads = 3 : i64, head_dim = 1 : i64, batch = 1 : i64, query_tokens = 4 : i64, context_tokens = 4 : i64} : (tensor<1x4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>) -> (tensor<1x4x4xf16>, tensor<2x1x4x4xf16>)
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @more_kv_heads_than_heads() {
  %x = model.value "x" input : tensor<1x4x4xf16>
  %p = model.value "p" parameter : tensor<4xf16>
  // expected-error @+1 {{'model.decoder_inference' op kv_heads (8) must divide heads (4)}}
  %y, %kv1 = model.decoder_inference "prefill" prefill(%x, %p, %p, %p, %p, %p, %p, %p, %p, %p, %p) datatype = float16 kv_datatype = float16 effects(mutation) {hidden = 4 : i64, ffn_hidden = 16 : i64, heads = 4 : i64, kv_heads = 8 : i64, head_dim = 1 : i64, batch = 1 : i64, query_tokens = 4 : i64, context_tokens = 4 : i64} : (tensor<1x4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>) -> (tensor<1x4x4xf16>, tensor<2x1x4x8xf16>)
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @uneven_split() {
  %w = model.value "w" parameter : tensor<4x6xf16>
  // expected-error @+1 {{'model.split' op dimension 1 of size 6 cannot be split into 4 equal parts}}
  %a:4 = model.split "s"(%w) dim = 1 : (tensor<4x6xf16>) -> (tensor<4x1xf16>, tensor<4x1xf16>, tensor<4x1xf16>, tensor<4x1xf16>)
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @split_result_shape() {
  %w = model.value "w" parameter : tensor<4x6xf16>
  // expected-error @+2 {{'model.split' op result #0 has type tensor<4x2xf16>, but splitting gives dimension 1 of size 3}}
  // expected-error @+1 {{'model.split' op result #1 has type tensor<4x2xf16>, but splitting gives dimension 1 of size 3}}
  %a:2 = model.split "s"(%w) dim = 1 : (tensor<4x6xf16>) -> (tensor<4x2xf16>, tensor<4x2xf16>)
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @split_dim() {
  %w = model.value "w" parameter : tensor<4x6xf16>
  // expected-error @+1 {{'model.split' op dim 2 is not a dimension of the input (rank 2)}}
  %a:2 = model.split "s"(%w) dim = 2 : (tensor<4x6xf16>) -> (tensor<4x3xf16>, tensor<4x3xf16>)
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @attention_kv_heads_divide() {
  %q = model.value "q" activation : tensor<2x8x12xf32>
  %k = model.value "k" activation : tensor<2x8x8xf32>
  // expected-error @+1 {{'model.attention_scores' op kv_heads (2) must divide heads (3)}}
  %s = model.attention_scores "s"(%q, %k) heads = 3 kv_heads = 2 head_dim = 4 scale = 0.5 causal : (tensor<2x8x12xf32>, tensor<2x8x8xf32>) -> tensor<2x3x8x8xf32>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @attention_key_width() {
  %q = model.value "q" activation : tensor<2x8x16xf32>
  %k = model.value "k" activation : tensor<2x8x16xf32>
  // expected-error @+1 {{'model.attention_scores' op keys: expected [b, s, kv_heads x head_dim = 8], but got [2, 8, 16]}}
  %s = model.attention_scores "s"(%q, %k) heads = 4 kv_heads = 2 head_dim = 4 scale = 0.5 : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x4x8x8xf32>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @attention_query_width() {
  %q = model.value "q" activation : tensor<2x8x12xf32>
  %k = model.value "k" activation : tensor<2x8x8xf32>
  // expected-error @+1 {{'model.attention_scores' op queries: expected [2, 8, 16], but got [2, 8, 12]}}
  %s = model.attention_scores "s"(%q, %k) heads = 4 kv_heads = 2 head_dim = 4 scale = 0.5 : (tensor<2x8x12xf32>, tensor<2x8x8xf32>) -> tensor<2x4x8x8xf32>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @attention_scores_result() {
  %q = model.value "q" activation : tensor<2x8x16xf32>
  %k = model.value "k" activation : tensor<2x8x8xf32>
  // expected-error @+1 {{'model.attention_scores' op result: expected [2, 4, 8, 8], but got [2, 2, 8, 8]}}
  %s = model.attention_scores "s"(%q, %k) heads = 4 kv_heads = 2 head_dim = 4 scale = 0.5 : (tensor<2x8x16xf32>, tensor<2x8x8xf32>) -> tensor<2x2x8x8xf32>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @attention_scale() {
  %q = model.value "q" activation : tensor<2x8x16xf32>
  %k = model.value "k" activation : tensor<2x8x8xf32>
  // expected-error @+1 {{'model.attention_scores' op scale must be finite and positive, but got -0.5}}
  %s = model.attention_scores "s"(%q, %k) heads = 4 kv_heads = 2 head_dim = 4 scale = -0.5 : (tensor<2x8x16xf32>, tensor<2x8x8xf32>) -> tensor<2x4x8x8xf32>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @attention_context_probs() {
  %p = model.value "p" activation : tensor<2x4x8x4xf32>
  %v = model.value "v" activation : tensor<2x8x8xf32>
  // expected-error @+1 {{'model.attention_context' op probabilities: expected [2, 4, 8, 8], but got [2, 4, 8, 4]}}
  %c = model.attention_context "c"(%p, %v) heads = 4 kv_heads = 2 head_dim = 4 : (tensor<2x4x8x4xf32>, tensor<2x8x8xf32>) -> tensor<2x8x16xf32>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @rope_odd_head_dim() {
  %x = model.value "x" activation : tensor<2x8x6xf32>
  // expected-error @+1 {{'model.rope' op head_dim must be even (rotate-half pairs j and j + head_dim/2), but got 3}}
  %r = model.rope "r"(%x) heads = 2 head_dim = 3 theta = 10000.0 : (tensor<2x8x6xf32>) -> tensor<2x8x6xf32>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @rope_theta() {
  %x = model.value "x" activation : tensor<2x8x8xf32>
  // expected-error @+1 {{'model.rope' op theta must be finite and greater than 1, but got 0.5}}
  %r = model.rope "r"(%x) heads = 2 head_dim = 4 theta = 0.5 : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @rope_width() {
  %x = model.value "x" activation : tensor<2x8x8xf32>
  // expected-error @+1 {{'model.rope' op expects an input [b, s, heads x head_dim = 16], but got tensor<2x8x8xf32>}}
  %r = model.rope "r"(%x) heads = 4 head_dim = 4 theta = 10000.0 : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @rope_result() {
  %x = model.value "x" activation : tensor<2x8x8xf32>
  // expected-error @+1 {{'model.rope' op result must have the input's type}}
  %r = model.rope "r"(%x) heads = 2 head_dim = 4 theta = 10000.0 : (tensor<2x8x8xf32>) -> tensor<2x8x8xf16>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @dropout_probability() {
  %x = model.value "x" activation : tensor<4xf32>
  // expected-error @+1 {{'model.dropout' op p must be a probability in [0, 1), but got 1}}
  %y = model.dropout "drop"(%x) p = 1.0 effects(random_state) : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @norm_eps() {
  %x = model.value "x" activation : tensor<2x4xf32>
  %g = model.value "g" parameter : tensor<4xf32>
  // expected-error @+1 {{'model.rms_norm' op eps must be finite and positive, but got 0}}
  %y = model.rms_norm "n"(%x, %g) eps = 0.0 : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @gradient_of_unknown_op() {
  %x = model.value "x" activation : tensor<2x4xf32>
  %dy = model.value "dy" activation_gradient : tensor<2x4xf32>
  // expected-error @+1 {{'model.activation_gradient' op names 'nowhere' in 'of', which is no differentiable forward op of the module}}
  %dx = model.activation_gradient "nowhere.agrad" of "nowhere"(%dy) wrt %x : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @gradient_wrt_other_value() {
  %x = model.value "x" activation : tensor<2x4xf32>
  %z = model.value "z" activation : tensor<2x4xf32>
  %g = model.value "g" parameter : tensor<4xf32>
  %y = model.rms_norm "n"(%x, %g) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %dy = model.value "dy" activation_gradient : tensor<2x4xf32>
  // expected-error @+1 {{'model.weight_gradient' op differentiates 'n' with respect to a value that is not one of its operands}}
  %dg = model.weight_gradient "n.wgrad" of "n"(%dy) wrt %z : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4xf32>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @adam_needs_betas() {
  %w = model.value "w" parameter : tensor<4xf32>
  %g = model.value "g" weight_gradient : tensor<4xf32>
  %m = model.value "m" optimizer_state : tensor<4xf32>
  %v = model.value "v" optimizer_state : tensor<4xf32>
  // expected-error @+1 {{'model.optimizer_step' op adam needs 'beta1'}}
  %w1, %m1, %v1 = model.optimizer_step "o"(%w, %g, %m, %v) adam lr = 0.1 beta2 = 0.9 eps = 1.0e-8 effects(parameter_update) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @sgd_without_betas() {
  %w = model.value "w" parameter : tensor<4xf32>
  %g = model.value "g" weight_gradient : tensor<4xf32>
  // expected-error @+1 {{'model.optimizer_step' op 'eps' applies to adam only, but kind is sgd}}
  %w1 = model.optimizer_step "o"(%w, %g) sgd lr = 0.1 eps = 1.0e-8 effects(parameter_update) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @optimizer_lr() {
  %w = model.value "w" parameter : tensor<4xf32>
  %g = model.value "g" weight_gradient : tensor<4xf32>
  // expected-error @+1 {{'model.optimizer_step' op lr must be finite and positive, but got 0}}
  %w1 = model.optimizer_step "o"(%w, %g) sgd lr = 0.0 effects(parameter_update) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @adam_state_count() {
  %w = model.value "w" parameter : tensor<4xf32>
  %g = model.value "g" weight_gradient : tensor<4xf32>
  %m = model.value "m" optimizer_state : tensor<4xf32>
  // expected-error @+1 {{'model.optimizer_step' op adam keeps 2 state tensors (no master copy at fp32), but got 1}}
  %w1, %m1 = model.optimizer_step "o"(%w, %g, %m) adam lr = 0.1 beta1 = 0.9 beta2 = 0.9 eps = 1.0e-8 effects(parameter_update) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @optimizer_state_type() {
  %w = model.value "w" parameter : tensor<4xbf16>
  %g = model.value "g" weight_gradient : tensor<4xbf16>
  %m = model.value "m" optimizer_state : tensor<4xbf16>
  // expected-error @+1 {{'model.optimizer_step' op state #0 must be an f32 tensor of the parameter's shape, but got tensor<4xbf16>}}
  %w1, %m1 = model.optimizer_step "o"(%w, %g, %m) sgd lr = 0.1 effects(parameter_update) : (tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>) -> (tensor<4xbf16>, tensor<4xbf16>)
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @activation_type() {
  %x = model.value "x" activation : tensor<4x8xf32>
  // expected-error @+1 {{'model.silu' op result type tensor<4x8xf16> must be the input's type tensor<4x8xf32>}}
  %y = model.silu "act"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf16>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @bias_width() {
  %x = model.value "x" activation : tensor<4x8xf32>
  %b = model.value "b" parameter : tensor<4xf32>
  // expected-error @+1 {{'model.bias_add' op expects a bias of shape [8] (the input's last dimension), but got tensor<4xf32>}}
  %y = model.bias_add "bias"(%x, %b) : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @bias_result_type() {
  %x = model.value "x" activation : tensor<4x8xf32>
  %b = model.value "b" parameter : tensor<8xf32>
  // expected-error @+1 {{'model.bias_add' op result type tensor<4x9xf32> must be the input's type tensor<4x8xf32>}}
  %y = model.bias_add "bias"(%x, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x9xf32>
  return
}
