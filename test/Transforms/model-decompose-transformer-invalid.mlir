// The decomposition replaces the block's function, so it refuses a function
// that holds anything else, and changes nothing.
// RUN: blueprint-opt %s --verify-diagnostics --model-decompose-transformer

"model.header"() {schema_name = "blueprint.model", schema_version = "1.0"} : () -> ()
func.func @block_and_more() {
  %x = "model.value"() {id = "block.in", role = "activation"} : () -> tensor<1x4x4xf16>
  %p = "model.value"() {id = "p", role = "parameter"} : () -> tensor<4xf16>
  %o = "model.value"() {id = "o", role = "optimizer_state"} : () -> tensor<4xf32>
  // expected-error @+1 {{'model.decoder_training' op cannot be decomposed: its function also holds 'model.gelu'}}
  %y = "model.decoder_training"(%x, %p, %p, %p, %p, %p, %p, %p, %p, %p, %p, %o) {id = "block", hidden = 4 : i64, ffn_hidden = 16 : i64, seq_len = 4 : i64, heads = 1 : i64, head_dim = 4 : i64, microbatch = 1 : i64, datatype = "float16", effects = ["parameter_update"]} : (tensor<1x4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf32>) -> tensor<1x4x4xf16>
  %z = "model.gelu"(%y) {id = "extra"} : (tensor<1x4x4xf16>) -> tensor<1x4x4xf16>
  "model.output"(%z) {id = "out"} : (tensor<1x4x4xf16>) -> ()
  return
}
