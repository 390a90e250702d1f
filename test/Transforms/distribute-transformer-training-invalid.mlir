// Negative cases: the pass reports at the op and leaves the module unchanged.
// RUN: blueprint-opt %s --split-input-file --verify-diagnostics --distribute-transformer-training

module attributes {} {
  "model.header"() {schema_name = "blueprint.model", schema_version = "1.0"} : () -> ()
  func.func @decoder_block() {
    %x = "model.value"() {id = "block.in", role = "activation"} : () -> tensor<2x16x64xf16>
    %p = "model.value"() {id = "p", role = "parameter"} : () -> tensor<64xf16>
    %o = "model.value"() {id = "o", role = "optimizer_state"} : () -> tensor<64xf32>
    // expected-error @+1 {{distribute-transformer-training: missing strategy: the module has no 'blueprint.training_spec' attribute}}
    %y = "model.decoder_training"(%x, %p, %p, %p, %p, %p, %p, %p, %p, %p, %p, %o) {id = "block", hidden = 64 : i64, ffn_hidden = 256 : i64, seq_len = 16 : i64, heads = 4 : i64, head_dim = 16 : i64, microbatch = 2 : i64, datatype = "float16", effects = ["parameter_update"]} : (tensor<2x16x64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64xf32>) -> tensor<2x16x64xf16>
    "model.output"(%y) {id = "block.out"} : (tensor<2x16x64xf16>) -> ()
    return
  }
}

// -----

module attributes {blueprint.training_spec = {mapping = {dp = 1 : i64, fused_activation = false, optimizer_sharding = false, pipeline_interleaving = 1 : i64, pp = 1 : i64, recompute = "none", seq_par_ag_redo = false, tp = 3 : i64, tp_comm = "ar"}, model = {blocks = 4 : i64, ffn_hidden = 256 : i64, gated_mlp = false, head_dim = 16 : i64, heads = 4 : i64, hidden = 64 : i64, seq_len = 16 : i64}, workload = {datatype = "float16", global_batch = 4 : i64, microbatch = 2 : i64}}} {
  "model.header"() {schema_name = "blueprint.model", schema_version = "1.0"} : () -> ()
  func.func @decoder_block() {
    %x = "model.value"() {id = "block.in", role = "activation"} : () -> tensor<2x16x64xf16>
    %p = "model.value"() {id = "p", role = "parameter"} : () -> tensor<64xf16>
    %o = "model.value"() {id = "o", role = "optimizer_state"} : () -> tensor<64xf32>
    // expected-error @+1 {{mapping.tp = 3 must divide model.hidden = 64}}
    %y = "model.decoder_training"(%x, %p, %p, %p, %p, %p, %p, %p, %p, %p, %p, %o) {id = "block", hidden = 64 : i64, ffn_hidden = 256 : i64, seq_len = 16 : i64, heads = 4 : i64, head_dim = 16 : i64, microbatch = 2 : i64, datatype = "float16", effects = ["parameter_update"]} : (tensor<2x16x64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64xf32>) -> tensor<2x16x64xf16>
    "model.output"(%y) {id = "block.out"} : (tensor<2x16x64xf16>) -> ()
    return
  }
}

// -----

module attributes {blueprint.training_spec = {mapping = {dp = 1 : i64, fused_activation = false, optimizer_sharding = false, pipeline_interleaving = 1 : i64, pp = 1 : i64, recompute = "none", seq_par_ag_redo = false, tp = 2 : i64, tp_comm = "ar"}, model = {blocks = 4 : i64, ffn_hidden = 256 : i64, gated_mlp = false, head_dim = 16 : i64, heads = 4 : i64, hidden = 64 : i64, seq_len = 16 : i64}, workload = {datatype = "float16", global_batch = 4 : i64, microbatch = 2 : i64}}} {
  "model.header"() {schema_name = "blueprint.model", schema_version = "1.0"} : () -> ()
  func.func @decoder_block() {
    %x = "model.value"() {id = "block.in", role = "activation"} : () -> tensor<2x16x64xf16>
    %p = "model.value"() {id = "p", role = "parameter"} : () -> tensor<64xf16>
    %o = "model.value"() {id = "o", role = "optimizer_state"} : () -> tensor<64xf32>
    // expected-error @+1 {{'model.decoder_training' op hidden is 32, but the strategy binding 'blueprint.training_spec' says 64}}
    %y = "model.decoder_training"(%x, %p, %p, %p, %p, %p, %p, %p, %p, %p, %p, %o) {id = "block", hidden = 32 : i64, ffn_hidden = 256 : i64, seq_len = 16 : i64, heads = 4 : i64, head_dim = 16 : i64, microbatch = 2 : i64, datatype = "float16", effects = ["parameter_update"]} : (tensor<2x16x64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64xf32>) -> tensor<2x16x64xf16>
    "model.output"(%y) {id = "block.out"} : (tensor<2x16x64xf16>) -> ()
    return
  }
}
