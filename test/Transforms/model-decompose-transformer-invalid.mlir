// The decomposition replaces the block's function, so it refuses a function
// that holds anything else, and changes nothing.
// RUN: blueprint-opt %s --verify-diagnostics --model-decompose-transformer

model.header schema "blueprint.model" version "1.0"
func.func @block_and_more() {
  %x = model.value "block.in" activation : tensor<1x4x4xf16>
  %p = model.value "p" parameter : tensor<4xf16>
  %o = model.value "o" optimizer_state : tensor<4xf32>
  // expected-error @+1 {{'model.decoder_training' op cannot be decomposed: its function also holds 'model.gelu'}}
  %y = model.decoder_training "block"(%x) norm1(%p, %p) attention(%p, %p, %p, %p) norm2(%p, %p) mlp(%p, %p) state(%o) datatype = float16 effects(parameter_update) {hidden = 4 : i64, ffn_hidden = 16 : i64, seq_len = 4 : i64, heads = 1 : i64, head_dim = 4 : i64, microbatch = 1 : i64} : (tensor<1x4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf32>) -> tensor<1x4x4xf16>
  %z = model.gelu "extra"(%y) : (tensor<1x4x4xf16>) -> tensor<1x4x4xf16>
  model.output %z "out" : tensor<1x4x4xf16>
  return
}
