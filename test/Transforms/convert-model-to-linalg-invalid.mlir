// convert-model-to-linalg refuses what it cannot execute, at the op, and
// leaves the module unchanged.
// RUN: blueprint-opt %s --split-input-file --verify-diagnostics --convert-model-to-linalg

model.header schema "blueprint.model" version "1.0"
func.func @coarse() {
  %0 = model.value "block.in" activation : tensor<1x4x4xf32>
  %1 = model.value "attn.ln.scale" parameter : tensor<4xf32>
  %2 = model.value "attn.ln.bias" parameter : tensor<4xf32>
  %3 = model.value "attn.q.weight" parameter : tensor<4x4xf32>
  %9 = model.value "mlp.fc1.weight" parameter : tensor<4x16xf32>
  %10 = model.value "mlp.fc2.weight" parameter : tensor<16x4xf32>
  %11 = model.value "optimizer.state" optimizer_state : tensor<0xf32>
  // expected-error @+1 {{'model.decoder_training' op is coarse: run model-decompose-transformer first}}
  %y = model.decoder_training "block"(%0) norm1(%1, %2) attention(%3, %3, %3, %3) norm2(%1, %2) mlp(%9, %10) state(%11) datatype = float32 effects(parameter_update) {ffn_hidden = 16 : i64, head_dim = 4 : i64, heads = 1 : i64, hidden = 4 : i64, microbatch = 1 : i64, seq_len = 4 : i64} : (tensor<1x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x16xf32>, tensor<16x4xf32>, tensor<0xf32>) -> tensor<1x4x4xf32>
  model.output %y "block.out" : tensor<1x4x4xf32>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @half() {
  // expected-error @+1 {{'model.value' op has tensor<2x4xf16>: convert-model-to-linalg lowers float32 ModelIR with static shapes (an executed step's datatype is float32)}}
  %x = model.value "x" activation : tensor<2x4xf16>
  %w = model.value "w" parameter : tensor<4x4xf16>
  %y = model.matmul "mm"(%x, %w) : (tensor<2x4xf16>, tensor<4x4xf16>) -> tensor<2x4xf16>
  model.output %y "y" : tensor<2x4xf16>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @dynamic() {
  // expected-error @+1 {{'model.value' op has tensor<?x4xf32>: convert-model-to-linalg lowers float32 ModelIR with static shapes}}
  %x = model.value "x" activation : tensor<?x4xf32>
  %w = model.value "w" parameter : tensor<4x4xf32>
  %y = model.matmul "mm"(%x, %w) : (tensor<?x4xf32>, tensor<4x4xf32>) -> tensor<?x4xf32>
  model.output %y "y" : tensor<?x4xf32>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @dropout() {
  %x = model.value "x" activation : tensor<4xf32>
  // expected-error @+1 {{'model.dropout' op has p = 0.5: executing dropout needs a mask every rank regenerates}}
  %y = model.dropout "drop"(%x) p = 0.5 effects(random_state) : (tensor<4xf32>) -> tensor<4xf32>
  model.output %y "y" : tensor<4xf32>
  return
}

// -----

model.header schema "blueprint.model" version "1.0"
func.func @no_rule() {
  %c = model.value "kv" kv_cache : tensor<2x1x4x4xf32>
  %k = model.value "k" activation : tensor<1x1x4xf32>
  // expected-error @+1 {{'model.kv_append' op '}}
  %n = model.kv_append "append"(%k, %k) cache(%c : tensor<2x1x4x4xf32>) effects(mutation) : (tensor<1x1x4xf32>, tensor<1x1x4xf32>) -> tensor<2x1x5x4xf32>
  model.output %n "kv.next" as kv_cache : tensor<2x1x5x4xf32>
  return
}

// -----

// expected-error @+1 {{convert-model-to-linalg: the module holds no ModelIR function}}
module {
  func.func @nothing() {
    return
  }
}
