// Negative cases: the pass reports at the op (or the module) and leaves the
// module unchanged.
// RUN: blueprint-opt %s --split-input-file --verify-diagnostics --distribute-transformer-training

module {
  model.header schema "blueprint.model" version "1.0"
  func.func @decoder_block() {
    %0 = model.value "block.in" activation : tensor<2x16x64xf16>
    %1 = model.value "attn.ln.scale" parameter : tensor<64xf16>
    %2 = model.value "attn.ln.bias" parameter : tensor<64xf16>
    %3 = model.value "attn.q.weight" parameter : tensor<64x64xf16>
    %4 = model.value "attn.k.weight" parameter : tensor<64x64xf16>
    %5 = model.value "attn.v.weight" parameter : tensor<64x64xf16>
    %6 = model.value "attn.proj.weight" parameter : tensor<64x64xf16>
    %7 = model.value "mlp.ln.scale" parameter : tensor<64xf16>
    %8 = model.value "mlp.ln.bias" parameter : tensor<64xf16>
    %9 = model.value "mlp.fc1.weight" parameter : tensor<64x256xf16>
    %10 = model.value "mlp.fc2.weight" parameter : tensor<256x64xf16>
    %11 = model.value "optimizer.state" optimizer_state : tensor<148224xf32>
    // expected-error @+1 {{distribute-transformer-training: missing strategy: the module has no 'blueprint.training_spec' attribute}}
    %12 = model.decoder_training "block"(%0) norm1(%1, %2) attention(%3, %4, %5, %6) norm2(%7, %8) mlp(%9, %10) state(%11) datatype = float16 effects("parameter_update|random_state") {ffn_hidden = 256 : i64, head_dim = 16 : i64, heads = 4 : i64, hidden = 64 : i64, microbatch = 2 : i64, seq_len = 16 : i64} : (tensor<2x16x64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64x256xf16>, tensor<256x64xf16>, tensor<148224xf32>) -> tensor<2x16x64xf16>
    model.output %12 "block.out" : tensor<2x16x64xf16>
    return
  }
}

// -----

module attributes {blueprint.training_spec = {mapping = {dp = 1 : i64, fused_activation = false, optimizer_sharding = false, pipeline_interleaving = 1 : i64, pp = 1 : i64, recompute = "none", seq_par_ag_redo = false, tp = 3 : i64, tp_comm = "ar"}, model = {blocks = 4 : i64, ffn_hidden = 256 : i64, gated_mlp = false, head_dim = 16 : i64, heads = 4 : i64, hidden = 64 : i64, name = "tiny", seq_len = 16 : i64}, workload = {datatype = "float16", global_batch = 4 : i64, microbatch = 2 : i64}}} {
  model.header schema "blueprint.model" version "1.0"
  func.func @decoder_block() {
    %0 = model.value "block.in" activation : tensor<2x16x64xf16>
    %1 = model.value "attn.ln.scale" parameter : tensor<64xf16>
    %2 = model.value "attn.ln.bias" parameter : tensor<64xf16>
    %3 = model.value "attn.q.weight" parameter : tensor<64x64xf16>
    %4 = model.value "attn.k.weight" parameter : tensor<64x64xf16>
    %5 = model.value "attn.v.weight" parameter : tensor<64x64xf16>
    %6 = model.value "attn.proj.weight" parameter : tensor<64x64xf16>
    %7 = model.value "mlp.ln.scale" parameter : tensor<64xf16>
    %8 = model.value "mlp.ln.bias" parameter : tensor<64xf16>
    %9 = model.value "mlp.fc1.weight" parameter : tensor<64x256xf16>
    %10 = model.value "mlp.fc2.weight" parameter : tensor<256x64xf16>
    %11 = model.value "optimizer.state" optimizer_state : tensor<148224xf32>
    // expected-error @+1 {{mapping.tp = 3 must divide model.hidden = 64}}
    %12 = model.decoder_training "block"(%0) norm1(%1, %2) attention(%3, %4, %5, %6) norm2(%7, %8) mlp(%9, %10) state(%11) datatype = float16 effects("parameter_update|random_state") {ffn_hidden = 256 : i64, head_dim = 16 : i64, heads = 4 : i64, hidden = 64 : i64, microbatch = 2 : i64, seq_len = 16 : i64} : (tensor<2x16x64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64x256xf16>, tensor<256x64xf16>, tensor<148224xf32>) -> tensor<2x16x64xf16>
    model.output %12 "block.out" : tensor<2x16x64xf16>
    return
  }
}

// -----

module attributes {blueprint.training_spec = {mapping = {dp = 1 : i64, fused_activation = false, optimizer_sharding = false, pipeline_interleaving = 1 : i64, pp = 1 : i64, recompute = "none", seq_par_ag_redo = false, tp = 2 : i64, tp_comm = "ar"}, model = {blocks = 4 : i64, ffn_hidden = 256 : i64, gated_mlp = false, head_dim = 16 : i64, heads = 4 : i64, hidden = 64 : i64, name = "tiny", seq_len = 16 : i64}, workload = {datatype = "float16", global_batch = 4 : i64, microbatch = 2 : i64}}} {
  model.header schema "blueprint.model" version "1.0"
  func.func @decoder_block() {
    %0 = model.value "block.in" activation : tensor<2x16x64xf16>
    %1 = model.value "attn.ln.scale" parameter : tensor<64xf16>
    %2 = model.value "attn.ln.bias" parameter : tensor<64xf16>
    %3 = model.value "attn.q.weight" parameter : tensor<64x64xf16>
    %4 = model.value "attn.k.weight" parameter : tensor<64x64xf16>
    %5 = model.value "attn.v.weight" parameter : tensor<64x64xf16>
    %6 = model.value "attn.proj.weight" parameter : tensor<64x64xf16>
    %7 = model.value "mlp.ln.scale" parameter : tensor<64xf16>
    %8 = model.value "mlp.ln.bias" parameter : tensor<64xf16>
    %9 = model.value "mlp.fc1.weight" parameter : tensor<64x256xf16>
    %10 = model.value "mlp.fc2.weight" parameter : tensor<256x64xf16>
    %11 = model.value "optimizer.state" optimizer_state : tensor<148224xf32>
    // expected-error @+1 {{'model.decoder_training' op hidden is 32, but the strategy binding 'blueprint.training_spec' says 64}}
    %12 = model.decoder_training "block"(%0) norm1(%1, %2) attention(%3, %4, %5, %6) norm2(%7, %8) mlp(%9, %10) state(%11) datatype = float16 effects("parameter_update|random_state") {ffn_hidden = 256 : i64, head_dim = 16 : i64, heads = 4 : i64, hidden = 32 : i64, microbatch = 2 : i64, seq_len = 16 : i64} : (tensor<2x16x64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64x256xf16>, tensor<256x64xf16>, tensor<148224xf32>) -> tensor<2x16x64xf16>
    model.output %12 "block.out" : tensor<2x16x64xf16>
    return
  }
}

// -----

module attributes {blueprint.training_spec = {mapping = {dp = 1 : i64, fused_activation = false, optimizer_sharding = false, pipeline_interleaving = 3 : i64, pp = 2 : i64, recompute = "none", seq_par_ag_redo = false, tp = 2 : i64, tp_comm = "ar"}, model = {blocks = 4 : i64, ffn_hidden = 256 : i64, gated_mlp = false, head_dim = 16 : i64, heads = 4 : i64, hidden = 64 : i64, name = "tiny", seq_len = 16 : i64}, workload = {datatype = "float16", global_batch = 6 : i64, microbatch = 2 : i64}}} {
  model.header schema "blueprint.model" version "1.0"
  func.func @decoder_block() {
    %0 = model.value "block.in" activation : tensor<2x16x64xf16>
    %1 = model.value "attn.ln.scale" parameter : tensor<64xf16>
    %2 = model.value "attn.ln.bias" parameter : tensor<64xf16>
    %3 = model.value "attn.q.weight" parameter : tensor<64x64xf16>
    %4 = model.value "attn.k.weight" parameter : tensor<64x64xf16>
    %5 = model.value "attn.v.weight" parameter : tensor<64x64xf16>
    %6 = model.value "attn.proj.weight" parameter : tensor<64x64xf16>
    %7 = model.value "mlp.ln.scale" parameter : tensor<64xf16>
    %8 = model.value "mlp.ln.bias" parameter : tensor<64xf16>
    %9 = model.value "mlp.fc1.weight" parameter : tensor<64x256xf16>
    %10 = model.value "mlp.fc2.weight" parameter : tensor<256x64xf16>
    %11 = model.value "optimizer.state" optimizer_state : tensor<148224xf32>
    // expected-error @+1 {{mapping.pipeline_interleaving = 3 must divide the blocks of the fullest stage, ⌈model.blocks / mapping.pp⌉ = ⌈4 / 2⌉ = 2}}
    %12 = model.decoder_training "block"(%0) norm1(%1, %2) attention(%3, %4, %5, %6) norm2(%7, %8) mlp(%9, %10) state(%11) datatype = float16 effects("parameter_update|random_state") {ffn_hidden = 256 : i64, head_dim = 16 : i64, heads = 4 : i64, hidden = 64 : i64, microbatch = 2 : i64, seq_len = 16 : i64} : (tensor<2x16x64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64x256xf16>, tensor<256x64xf16>, tensor<148224xf32>) -> tensor<2x16x64xf16>
    model.output %12 "block.out" : tensor<2x16x64xf16>
    return
  }
}

// -----

module attributes {blueprint.training_spec = {mapping = {dp = 1 : i64, fused_activation = false, optimizer_sharding = false, pipeline_interleaving = 1 : i64, pp = 5 : i64, recompute = "none", seq_par_ag_redo = false, tp = 2 : i64, tp_comm = "ar"}, model = {blocks = 4 : i64, ffn_hidden = 256 : i64, gated_mlp = false, head_dim = 16 : i64, heads = 4 : i64, hidden = 64 : i64, name = "tiny", seq_len = 16 : i64}, workload = {datatype = "float16", global_batch = 4 : i64, microbatch = 2 : i64}}} {
  model.header schema "blueprint.model" version "1.0"
  func.func @decoder_block() {
    %0 = model.value "block.in" activation : tensor<2x16x64xf16>
    %1 = model.value "attn.ln.scale" parameter : tensor<64xf16>
    %2 = model.value "attn.ln.bias" parameter : tensor<64xf16>
    %3 = model.value "attn.q.weight" parameter : tensor<64x64xf16>
    %4 = model.value "attn.k.weight" parameter : tensor<64x64xf16>
    %5 = model.value "attn.v.weight" parameter : tensor<64x64xf16>
    %6 = model.value "attn.proj.weight" parameter : tensor<64x64xf16>
    %7 = model.value "mlp.ln.scale" parameter : tensor<64xf16>
    %8 = model.value "mlp.ln.bias" parameter : tensor<64xf16>
    %9 = model.value "mlp.fc1.weight" parameter : tensor<64x256xf16>
    %10 = model.value "mlp.fc2.weight" parameter : tensor<256x64xf16>
    %11 = model.value "optimizer.state" optimizer_state : tensor<148224xf32>
    // expected-error @+1 {{mapping.pp = 5 exceeds model.blocks = 4: every pipeline stage holds at least one block}}
    %12 = model.decoder_training "block"(%0) norm1(%1, %2) attention(%3, %4, %5, %6) norm2(%7, %8) mlp(%9, %10) state(%11) datatype = float16 effects("parameter_update|random_state") {ffn_hidden = 256 : i64, head_dim = 16 : i64, heads = 4 : i64, hidden = 64 : i64, microbatch = 2 : i64, seq_len = 16 : i64} : (tensor<2x16x64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64x256xf16>, tensor<256x64xf16>, tensor<148224xf32>) -> tensor<2x16x64xf16>
    model.output %12 "block.out" : tensor<2x16x64xf16>
    return
  }
}

// -----

module attributes {blueprint.training_spec = {mapping = {dp = 1 : i64, fused_activation = false, optimizer_sharding = false, pipeline_interleaving = 1 : i64, pp = 1 : i64, recompute = "none", seq_par_ag_redo = false, tp = 2 : i64, tp_comm = "ar"}, model = {blocks = 4 : i64, ffn_hidden = 256 : i64, gated_mlp = false, head_dim = 16 : i64, heads = 4 : i64, hidden = 64 : i64, name = "tiny", seq_len = 16 : i64}, workload = {datatype = "float16", global_batch = 4 : i64, microbatch = 2 : i64}}} {
  model.header schema "blueprint.model" version "1.0"
  func.func @decoder_block() {
    %0 = model.value "block.in" activation : tensor<2x16x64xf16>
    %1 = model.value "attn.ln.scale" parameter : tensor<64xf16>
    %2 = model.value "attn.ln.bias" parameter : tensor<64xf16>
    %3 = model.value "attn.q.weight" parameter : tensor<64x64xf16>
    %4 = model.value "attn.k.weight" parameter : tensor<64x64xf16>
    %5 = model.value "attn.v.weight" parameter : tensor<64x64xf16>
    %6 = model.value "attn.proj.weight" parameter : tensor<64x64xf16>
    %7 = model.value "mlp.ln.scale" parameter : tensor<64xf16>
    %8 = model.value "mlp.ln.bias" parameter : tensor<64xf16>
    %9 = model.value "mlp.fc1.weight" parameter : tensor<64x256xf16>
    %10 = model.value "mlp.fc2.weight" parameter : tensor<256x64xf16>
    %11 = model.value "optimizer.state" optimizer_state : tensor<148224xf32>
    // expected-error @+1 {{'model.decoder_training' op datatype is 'bfloat16', but the strategy binding says 'float16'}}
    %12 = model.decoder_training "block"(%0) norm1(%1, %2) attention(%3, %4, %5, %6) norm2(%7, %8) mlp(%9, %10) state(%11) datatype = bfloat16 effects("parameter_update|random_state") {ffn_hidden = 256 : i64, head_dim = 16 : i64, heads = 4 : i64, hidden = 64 : i64, microbatch = 2 : i64, seq_len = 16 : i64} : (tensor<2x16x64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64x256xf16>, tensor<256x64xf16>, tensor<148224xf32>) -> tensor<2x16x64xf16>
    model.output %12 "block.out" : tensor<2x16x64xf16>
    return
  }
}

// -----

// expected-error @+1 {{distribute-transformer-training: no 'model.decoder_training' op (or decomposed block) to distribute}}
module attributes {blueprint.training_spec = {mapping = {dp = 1 : i64, fused_activation = false, optimizer_sharding = false, pipeline_interleaving = 1 : i64, pp = 1 : i64, recompute = "none", seq_par_ag_redo = false, tp = 2 : i64, tp_comm = "ar"}, model = {blocks = 4 : i64, ffn_hidden = 256 : i64, gated_mlp = false, head_dim = 16 : i64, heads = 4 : i64, hidden = 64 : i64, name = "tiny", seq_len = 16 : i64}, workload = {datatype = "float16", global_batch = 4 : i64, microbatch = 2 : i64}}} {
  model.header schema "blueprint.model" version "1.0"
  func.func @decoder_block() {
    %0 = model.value "block.in" activation : tensor<2x16x64xf16>
    %1 = model.value "attn.ln.scale" parameter : tensor<64xf16>
    %2 = model.value "attn.ln.bias" parameter : tensor<64xf16>
    %3 = model.value "attn.q.weight" parameter : tensor<64x64xf16>
    %4 = model.value "attn.k.weight" parameter : tensor<64x64xf16>
    %5 = model.value "attn.v.weight" parameter : tensor<64x64xf16>
    %6 = model.value "attn.proj.weight" parameter : tensor<64x64xf16>
    %7 = model.value "mlp.ln.scale" parameter : tensor<64xf16>
    %8 = model.value "mlp.ln.bias" parameter : tensor<64xf16>
    %9 = model.value "mlp.fc1.weight" parameter : tensor<64x256xf16>
    %10 = model.value "mlp.fc2.weight" parameter : tensor<256x64xf16>
    %11 = model.value "optimizer.state" optimizer_state : tensor<148224xf32>
    return
  }
}
