// The decomposition builds every type from the coarse op's attributes, so it
// first checks that the op's operand and result types are the ones those
// attributes imply (and that they agree with the bound strategy), with
// checked extents; a disagreement is a located error at the op, and the
// module is left unchanged.
// RUN: blueprint-opt %s --split-input-file --verify-diagnostics --model-decompose-transformer

// Training: `hidden` (2) disagrees with the operand types (4 wide).
module {
  model.header schema "blueprint.model" version "1.0"
  func.func @decoder_block() {
    %0 = model.value "block.in" activation : tensor<1x4x4xf16>
    %1 = model.value "attn.ln.scale" parameter : tensor<4xf16>
    %2 = model.value "attn.ln.bias" parameter : tensor<4xf16>
    %3 = model.value "attn.q.weight" parameter : tensor<4x4xf16>
    %4 = model.value "attn.k.weight" parameter : tensor<4x4xf16>
    %5 = model.value "attn.v.weight" parameter : tensor<4x4xf16>
    %6 = model.value "attn.proj.weight" parameter : tensor<4x4xf16>
    %7 = model.value "mlp.ln.scale" parameter : tensor<4xf16>
    %8 = model.value "mlp.ln.bias" parameter : tensor<4xf16>
    %9 = model.value "mlp.fc1.weight" parameter : tensor<4x16xf16>
    %10 = model.value "mlp.fc2.weight" parameter : tensor<16x4xf16>
    %11 = model.value "optimizer.state" optimizer_state : tensor<624xf32>
    // expected-error @+1 {{'model.decoder_training' op operand #0 (input): expected tensor<1x4x2xf16> (microbatch x seq_len x hidden), got tensor<1x4x4xf16>}}
    %y = model.decoder_training "block"(%0) norm1(%1, %2) attention(%3, %4, %5, %6) norm2(%7, %8) mlp(%9, %10) state(%11) datatype = float16 effects("parameter_update|random_state") {ffn_hidden = 16 : i64, head_dim = 4 : i64, heads = 1 : i64, hidden = 2 : i64, microbatch = 1 : i64, seq_len = 4 : i64} : (tensor<1x4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x16xf16>, tensor<16x4xf16>, tensor<624xf32>) -> tensor<1x4x4xf16>
    model.output %y "block.out" : tensor<1x4x4xf16>
    return
  }
}

// -----

// Training: the attributes disagree with the bound strategy (the third case of
// distribute-transformer-training-invalid.mlir, reported by the decomposition too).
module attributes {blueprint.training_spec = {mapping = {dp = 1 : i64, fused_activation = false, optimizer_sharding = false, pipeline_interleaving = 1 : i64, pp = 1 : i64, recompute = "none", seq_par_ag_redo = false, tp = 1 : i64, tp_comm = "ar"}, model = {blocks = 1 : i64, ffn_hidden = 16 : i64, gated_mlp = false, head_dim = 4 : i64, heads = 1 : i64, hidden = 4 : i64, name = "t", seq_len = 4 : i64}, workload = {datatype = "float16", global_batch = 1 : i64, microbatch = 1 : i64}}} {
  model.header schema "blueprint.model" version "1.0"
  func.func @decoder_block() {
    %0 = model.value "block.in" activation : tensor<1x4x4xf16>
    %1 = model.value "attn.ln.scale" parameter : tensor<4xf16>
    %2 = model.value "attn.ln.bias" parameter : tensor<4xf16>
    %3 = model.value "attn.q.weight" parameter : tensor<4x4xf16>
    %4 = model.value "attn.k.weight" parameter : tensor<4x4xf16>
    %5 = model.value "attn.v.weight" parameter : tensor<4x4xf16>
    %6 = model.value "attn.proj.weight" parameter : tensor<4x4xf16>
    %7 = model.value "mlp.ln.scale" parameter : tensor<4xf16>
    %8 = model.value "mlp.ln.bias" parameter : tensor<4xf16>
    %9 = model.value "mlp.fc1.weight" parameter : tensor<4x16xf16>
    %10 = model.value "mlp.fc2.weight" parameter : tensor<16x4xf16>
    %11 = model.value "optimizer.state" optimizer_state : tensor<624xf32>
    // expected-error @+1 {{'model.decoder_training' op hidden is 2, but the strategy binding 'blueprint.training_spec' says 4}}
    %y = model.decoder_training "block"(%0) norm1(%1, %2) attention(%3, %4, %5, %6) norm2(%7, %8) mlp(%9, %10) state(%11) datatype = float16 effects("parameter_update|random_state") {ffn_hidden = 16 : i64, head_dim = 4 : i64, heads = 1 : i64, hidden = 2 : i64, microbatch = 1 : i64, seq_len = 4 : i64} : (tensor<1x4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x16xf16>, tensor<16x4xf16>, tensor<624xf32>) -> tensor<1x4x4xf16>
    model.output %y "block.out" : tensor<1x4x4xf16>
    return
  }
}

// -----

// Training: the datatype disagrees with the bound strategy.
module attributes {blueprint.training_spec = {mapping = {dp = 1 : i64, fused_activation = false, optimizer_sharding = false, pipeline_interleaving = 1 : i64, pp = 1 : i64, recompute = "none", seq_par_ag_redo = false, tp = 1 : i64, tp_comm = "ar"}, model = {blocks = 1 : i64, ffn_hidden = 16 : i64, gated_mlp = false, head_dim = 4 : i64, heads = 1 : i64, hidden = 4 : i64, name = "t", seq_len = 4 : i64}, workload = {datatype = "float16", global_batch = 1 : i64, microbatch = 1 : i64}}} {
  model.header schema "blueprint.model" version "1.0"
  func.func @decoder_block() {
    %0 = model.value "block.in" activation : tensor<1x4x4xf16>
    %1 = model.value "attn.ln.scale" parameter : tensor<4xf16>
    %2 = model.value "attn.ln.bias" parameter : tensor<4xf16>
    %3 = model.value "attn.q.weight" parameter : tensor<4x4xf16>
    %4 = model.value "attn.k.weight" parameter : tensor<4x4xf16>
    %5 = model.value "attn.v.weight" parameter : tensor<4x4xf16>
    %6 = model.value "attn.proj.weight" parameter : tensor<4x4xf16>
    %7 = model.value "mlp.ln.scale" parameter : tensor<4xf16>
    %8 = model.value "mlp.ln.bias" parameter : tensor<4xf16>
    %9 = model.value "mlp.fc1.weight" parameter : tensor<4x16xf16>
    %10 = model.value "mlp.fc2.weight" parameter : tensor<16x4xf16>
    %11 = model.value "optimizer.state" optimizer_state : tensor<624xf32>
    // expected-error @+1 {{'model.decoder_training' op datatype is 'bfloat16', but the strategy binding 'blueprint.training_spec' says 'float16'}}
    %y = model.decoder_training "block"(%0) norm1(%1, %2) attention(%3, %4, %5, %6) norm2(%7, %8) mlp(%9, %10) state(%11) datatype = bfloat16 effects("parameter_update|random_state") {ffn_hidden = 16 : i64, head_dim = 4 : i64, heads = 1 : i64, hidden = 4 : i64, microbatch = 1 : i64, seq_len = 4 : i64} : (tensor<1x4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x16xf16>, tensor<16x4xf16>, tensor<624xf32>) -> tensor<1x4x4xf16>
    model.output %y "block.out" : tensor<1x4x4xf16>
    return
  }
}

// -----

// Training: a parameter whose shape is not the one heads x head_dim implies.
module {
  model.header schema "blueprint.model" version "1.0"
  func.func @decoder_block() {
    %0 = model.value "block.in" activation : tensor<1x4x4xf16>
    %1 = model.value "attn.ln.scale" parameter : tensor<4xf16>
    %2 = model.value "attn.ln.bias" parameter : tensor<4xf16>
    %3 = model.value "attn.q.weight" parameter : tensor<4x8xf16>
    %4 = model.value "attn.k.weight" parameter : tensor<4x4xf16>
    %5 = model.value "attn.v.weight" parameter : tensor<4x4xf16>
    %6 = model.value "attn.proj.weight" parameter : tensor<4x4xf16>
    %7 = model.value "mlp.ln.scale" parameter : tensor<4xf16>
    %8 = model.value "mlp.ln.bias" parameter : tensor<4xf16>
    %9 = model.value "mlp.fc1.weight" parameter : tensor<4x16xf16>
    %10 = model.value "mlp.fc2.weight" parameter : tensor<16x4xf16>
    %11 = model.value "optimizer.state" optimizer_state : tensor<624xf32>
    // expected-error @+1 {{'model.decoder_training' op operand #3 (q_weight): expected tensor<4x4xf16> (hidden x heads*head_dim), got tensor<4x8xf16>}}
    %y = model.decoder_training "block"(%0) norm1(%1, %2) attention(%3, %4, %5, %6) norm2(%7, %8) mlp(%9, %10) state(%11) datatype = float16 effects("parameter_update|random_state") {ffn_hidden = 16 : i64, head_dim = 4 : i64, heads = 1 : i64, hidden = 4 : i64, microbatch = 1 : i64, seq_len = 4 : i64} : (tensor<1x4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x8xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x16xf16>, tensor<16x4xf16>, tensor<624xf32>) -> tensor<1x4x4xf16>
    model.output %y "block.out" : tensor<1x4x4xf16>
    return
  }
}

// -----

// Training: the second MLP weight is ffn_hidden x hidden.
module {
  model.header schema "blueprint.model" version "1.0"
  func.func @decoder_block() {
    %0 = model.value "block.in" activation : tensor<1x4x4xf16>
    %1 = model.value "attn.ln.scale" parameter : tensor<4xf16>
    %2 = model.value "attn.ln.bias" parameter : tensor<4xf16>
    %3 = model.value "attn.q.weight" parameter : tensor<4x4xf16>
    %4 = model.value "attn.k.weight" parameter : tensor<4x4xf16>
    %5 = model.value "attn.v.weight" parameter : tensor<4x4xf16>
    %6 = model.value "attn.proj.weight" parameter : tensor<4x4xf16>
    %7 = model.value "mlp.ln.scale" parameter : tensor<4xf16>
    %8 = model.value "mlp.ln.bias" parameter : tensor<4xf16>
    %9 = model.value "mlp.fc1.weight" parameter : tensor<4x16xf16>
    %10 = model.value "mlp.fc2.weight" parameter : tensor<8x4xf16>
    %11 = model.value "optimizer.state" optimizer_state : tensor<624xf32>
    // expected-error @+1 {{'model.decoder_training' op operand #10 (fc2_weight): expected tensor<16x4xf16> (ffn_hidden x hidden), got tensor<8x4xf16>}}
    %y = model.decoder_training "block"(%0) norm1(%1, %2) attention(%3, %4, %5, %6) norm2(%7, %8) mlp(%9, %10) state(%11) datatype = float16 effects("parameter_update|random_state") {ffn_hidden = 16 : i64, head_dim = 4 : i64, heads = 1 : i64, hidden = 4 : i64, microbatch = 1 : i64, seq_len = 4 : i64} : (tensor<1x4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x16xf16>, tensor<8x4xf16>, tensor<624xf32>) -> tensor<1x4x4xf16>
    model.output %y "block.out" : tensor<1x4x4xf16>
    return
  }
}

// -----

// Training: element types follow `datatype`.
module {
  model.header schema "blueprint.model" version "1.0"
  func.func @decoder_block() {
    %0 = model.value "block.in" activation : tensor<1x4x4xbf16>
    %1 = model.value "attn.ln.scale" parameter : tensor<4xbf16>
    %2 = model.value "attn.ln.bias" parameter : tensor<4xbf16>
    %3 = model.value "attn.q.weight" parameter : tensor<4x4xbf16>
    %4 = model.value "attn.k.weight" parameter : tensor<4x4xbf16>
    %5 = model.value "attn.v.weight" parameter : tensor<4x4xbf16>
    %6 = model.value "attn.proj.weight" parameter : tensor<4x4xbf16>
    %7 = model.value "mlp.ln.scale" parameter : tensor<4xbf16>
    %8 = model.value "mlp.ln.bias" parameter : tensor<4xbf16>
    %9 = model.value "mlp.fc1.weight" parameter : tensor<4x16xbf16>
    %10 = model.value "mlp.fc2.weight" parameter : tensor<16x4xbf16>
    %11 = model.value "optimizer.state" optimizer_state : tensor<624xf32>
    // expected-error @+1 {{'model.decoder_training' op operand #0 (input): expected tensor<1x4x4xf16> (microbatch x seq_len x hidden), got tensor<1x4x4xbf16>}}
    %y = model.decoder_training "block"(%0) norm1(%1, %2) attention(%3, %4, %5, %6) norm2(%7, %8) mlp(%9, %10) state(%11) datatype = float16 effects("parameter_update|random_state") {ffn_hidden = 16 : i64, head_dim = 4 : i64, heads = 1 : i64, hidden = 4 : i64, microbatch = 1 : i64, seq_len = 4 : i64} : (tensor<1x4x4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<4x4xbf16>, tensor<4x4xbf16>, tensor<4x4xbf16>, tensor<4x4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<4x16xbf16>, tensor<16x4xbf16>, tensor<624xf32>) -> tensor<1x4x4xbf16>
    model.output %y "block.out" : tensor<1x4x4xbf16>
    return
  }
}

// -----

// Training: the result type is the input's.
module {
  model.header schema "blueprint.model" version "1.0"
  func.func @decoder_block() {
    %0 = model.value "block.in" activation : tensor<1x4x4xf16>
    %1 = model.value "attn.ln.scale" parameter : tensor<4xf16>
    %2 = model.value "attn.ln.bias" parameter : tensor<4xf16>
    %3 = model.value "attn.q.weight" parameter : tensor<4x4xf16>
    %4 = model.value "attn.k.weight" parameter : tensor<4x4xf16>
    %5 = model.value "attn.v.weight" parameter : tensor<4x4xf16>
    %6 = model.value "attn.proj.weight" parameter : tensor<4x4xf16>
    %7 = model.value "mlp.ln.scale" parameter : tensor<4xf16>
    %8 = model.value "mlp.ln.bias" parameter : tensor<4xf16>
    %9 = model.value "mlp.fc1.weight" parameter : tensor<4x16xf16>
    %10 = model.value "mlp.fc2.weight" parameter : tensor<16x4xf16>
    %11 = model.value "optimizer.state" optimizer_state : tensor<624xf32>
    // expected-error @+1 {{'model.decoder_training' op result #0 (output): expected tensor<1x4x4xf16> (microbatch x seq_len x hidden), got tensor<1x4x8xf16>}}
    %y = model.decoder_training "block"(%0) norm1(%1, %2) attention(%3, %4, %5, %6) norm2(%7, %8) mlp(%9, %10) state(%11) datatype = float16 effects("parameter_update|random_state") {ffn_hidden = 16 : i64, head_dim = 4 : i64, heads = 1 : i64, hidden = 4 : i64, microbatch = 1 : i64, seq_len = 4 : i64} : (tensor<1x4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x16xf16>, tensor<16x4xf16>, tensor<624xf32>) -> tensor<1x4x8xf16>
    model.output %y "block.out" : tensor<1x4x8xf16>
    return
  }
}

// -----

// Training: heads x head_dim overflows i64 (2^62 x 16): a located error, not a panic
// or a wrapped extent.
module {
  model.header schema "blueprint.model" version "1.0"
  func.func @decoder_block() {
    %0 = model.value "block.in" activation : tensor<1x4x4xf16>
    %1 = model.value "attn.ln.scale" parameter : tensor<4xf16>
    %2 = model.value "attn.ln.bias" parameter : tensor<4xf16>
    %3 = model.value "attn.q.weight" parameter : tensor<4x4xf16>
    %4 = model.value "attn.k.weight" parameter : tensor<4x4xf16>
    %5 = model.value "attn.v.weight" parameter : tensor<4x4xf16>
    %6 = model.value "attn.proj.weight" parameter : tensor<4x4xf16>
    %7 = model.value "mlp.ln.scale" parameter : tensor<4xf16>
    %8 = model.value "mlp.ln.bias" parameter : tensor<4xf16>
    %9 = model.value "mlp.fc1.weight" parameter : tensor<4x16xf16>
    %10 = model.value "mlp.fc2.weight" parameter : tensor<16x4xf16>
    %11 = model.value "optimizer.state" optimizer_state : tensor<624xf32>
    // expected-error @+1 {{'model.decoder_training' op heads x head_dim = 4611686018427387904 x 16 exceeds 2^63 - 1, the largest tensor extent}}
    %y = model.decoder_training "block"(%0) norm1(%1, %2) attention(%3, %4, %5, %6) norm2(%7, %8) mlp(%9, %10) state(%11) datatype = float16 effects("parameter_update|random_state") {ffn_hidden = 16 : i64, head_dim = 16 : i64, heads = 4611686018427387904 : i64, hidden = 4 : i64, microbatch = 1 : i64, seq_len = 4 : i64} : (tensor<1x4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x16xf16>, tensor<16x4xf16>, tensor<624xf32>) -> tensor<1x4x4xf16>
    model.output %y "block.out" : tensor<1x4x4xf16>
    return
  }
}

// -----

// Training: the product fits in u64 but not in an i64 extent (2^32 x 2^31 = 2^63).
module {
  model.header schema "blueprint.model" version "1.0"
  func.func @decoder_block() {
    %0 = model.value "block.in" activation : tensor<1x4x4xf16>
    %1 = model.value "attn.ln.scale" parameter : tensor<4xf16>
    %2 = model.value "attn.ln.bias" parameter : tensor<4xf16>
    %3 = model.value "attn.q.weight" parameter : tensor<4x4xf16>
    %4 = model.value "attn.k.weight" parameter : tensor<4x4xf16>
    %5 = model.value "attn.v.weight" parameter : tensor<4x4xf16>
    %6 = model.value "attn.proj.weight" parameter : tensor<4x4xf16>
    %7 = model.value "mlp.ln.scale" parameter : tensor<4xf16>
    %8 = model.value "mlp.ln.bias" parameter : tensor<4xf16>
    %9 = model.value "mlp.fc1.weight" parameter : tensor<4x16xf16>
    %10 = model.value "mlp.fc2.weight" parameter : tensor<16x4xf16>
    %11 = model.value "optimizer.state" optimizer_state : tensor<624xf32>
    // expected-error @+1 {{'model.decoder_training' op heads x head_dim = 4294967296 x 2147483648 exceeds 2^63 - 1, the largest tensor extent}}
    %y = model.decoder_training "block"(%0) norm1(%1, %2) attention(%3, %4, %5, %6) norm2(%7, %8) mlp(%9, %10) state(%11) datatype = float16 effects("parameter_update|random_state") {ffn_hidden = 16 : i64, head_dim = 2147483648 : i64, heads = 4294967296 : i64, hidden = 4 : i64, microbatch = 1 : i64, seq_len = 4 : i64} : (tensor<1x4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x16xf16>, tensor<16x4xf16>, tensor<624xf32>) -> tensor<1x4x4xf16>
    model.output %y "block.out" : tensor<1x4x4xf16>
    return
  }
}

// -----

// Training: one block per function (the function is replaced as a whole).
module {
  model.header schema "blueprint.model" version "1.0"
  func.func @decoder_block() {
    %0 = model.value "block.in" activation : tensor<1x4x4xf16>
    %1 = model.value "attn.ln.scale" parameter : tensor<4xf16>
    %2 = model.value "attn.ln.bias" parameter : tensor<4xf16>
    %3 = model.value "attn.q.weight" parameter : tensor<4x4xf16>
    %4 = model.value "attn.k.weight" parameter : tensor<4x4xf16>
    %5 = model.value "attn.v.weight" parameter : tensor<4x4xf16>
    %6 = model.value "attn.proj.weight" parameter : tensor<4x4xf16>
    %7 = model.value "mlp.ln.scale" parameter : tensor<4xf16>
    %8 = model.value "mlp.ln.bias" parameter : tensor<4xf16>
    %9 = model.value "mlp.fc1.weight" parameter : tensor<4x16xf16>
    %10 = model.value "mlp.fc2.weight" parameter : tensor<16x4xf16>
    %11 = model.value "optimizer.state" optimizer_state : tensor<624xf32>
    // expected-error @+1 {{'model.decoder_training' op cannot be decomposed: its function also holds 'model.decoder_training'}}
    %y = model.decoder_training "block"(%0) norm1(%1, %2) attention(%3, %4, %5, %6) norm2(%7, %8) mlp(%9, %10) state(%11) datatype = float16 effects("parameter_update|random_state") {ffn_hidden = 16 : i64, head_dim = 4 : i64, heads = 1 : i64, hidden = 4 : i64, microbatch = 1 : i64, seq_len = 4 : i64} : (tensor<1x4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x16xf16>, tensor<16x4xf16>, tensor<624xf32>) -> tensor<1x4x4xf16>
    model.output %y "block.out" : tensor<1x4x4xf16>
    %z = model.decoder_training "block2"(%0) norm1(%1, %2) attention(%3, %4, %5, %6) norm2(%7, %8) mlp(%9, %10) state(%11) datatype = float16 effects("parameter_update|random_state") {ffn_hidden = 16 : i64, head_dim = 4 : i64, heads = 1 : i64, hidden = 4 : i64, microbatch = 1 : i64, seq_len = 4 : i64} : (tensor<1x4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x16xf16>, tensor<16x4xf16>, tensor<624xf32>) -> tensor<1x4x4xf16>
    model.output %z "block2.out" : tensor<1x4x4xf16>
    return
  }
}

// -----

// Training: a value used as two operands (both layer norms share one scale) is
// declared once in the decomposition, so its ids stay unique (no error).
module {
  model.header schema "blueprint.model" version "1.0"
  func.func @decoder_block() {
    %0 = model.value "block.in" activation : tensor<1x4x4xf16>
    %1 = model.value "attn.ln.scale" parameter : tensor<4xf16>
    %2 = model.value "attn.ln.bias" parameter : tensor<4xf16>
    %3 = model.value "attn.q.weight" parameter : tensor<4x4xf16>
    %4 = model.value "attn.k.weight" parameter : tensor<4x4xf16>
    %5 = model.value "attn.v.weight" parameter : tensor<4x4xf16>
    %6 = model.value "attn.proj.weight" parameter : tensor<4x4xf16>
    %7 = model.value "mlp.ln.scale" parameter : tensor<4xf16>
    %8 = model.value "mlp.ln.bias" parameter : tensor<4xf16>
    %9 = model.value "mlp.fc1.weight" parameter : tensor<4x16xf16>
    %10 = model.value "mlp.fc2.weight" parameter : tensor<16x4xf16>
    %11 = model.value "optimizer.state" optimizer_state : tensor<624xf32>
    %y = model.decoder_training "block"(%0) norm1(%1, %2) attention(%3, %4, %5, %6) norm2(%1, %8) mlp(%9, %10) state(%11) datatype = float16 effects("parameter_update|random_state") {ffn_hidden = 16 : i64, head_dim = 4 : i64, heads = 1 : i64, hidden = 4 : i64, microbatch = 1 : i64, seq_len = 4 : i64} : (tensor<1x4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x16xf16>, tensor<16x4xf16>, tensor<624xf32>) -> tensor<1x4x4xf16>
    model.output %y "block.out" : tensor<1x4x4xf16>
    return
  }
}

// -----

// Inference: `hidden` (2) disagrees with the operand types (4 wide).
module {
  model.header schema "blueprint.model" version "1.0"
  func.func @decoder_block_inference() {
    %0 = model.value "prompt.in" input : tensor<1x4x4xf16>
    %1 = model.value "attn.ln.scale" parameter : tensor<4xf16>
    %2 = model.value "attn.ln.bias" parameter : tensor<4xf16>
    %3 = model.value "attn.q.weight" parameter : tensor<4x4xf16>
    %4 = model.value "attn.k.weight" parameter : tensor<4x2xf16>
    %5 = model.value "attn.v.weight" parameter : tensor<4x2xf16>
    %6 = model.value "attn.proj.weight" parameter : tensor<4x4xf16>
    %7 = model.value "mlp.ln.scale" parameter : tensor<4xf16>
    %8 = model.value "mlp.ln.bias" parameter : tensor<4xf16>
    %9 = model.value "mlp.fc1.weight" parameter : tensor<4x8xf16>
    %10 = model.value "mlp.fc2.weight" parameter : tensor<8x4xf16>
    // expected-error @+1 {{'model.decoder_inference' op operand #0 (input): expected tensor<1x4x2xf16> (batch x query_tokens x hidden), got tensor<1x4x4xf16>}}
    %y, %kv = model.decoder_inference "prefill" prefill(%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10) datatype = float16 kv_datatype = float16 effects(mutation) {batch = 1 : i64, context_tokens = 4 : i64, ffn_hidden = 8 : i64, head_dim = 2 : i64, heads = 2 : i64, hidden = 2 : i64, kv_heads = 1 : i64, query_tokens = 4 : i64} : (tensor<1x4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x4xf16>, tensor<4x2xf16>, tensor<4x2xf16>, tensor<4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x8xf16>, tensor<8x4xf16>) -> (tensor<1x4x4xf16>, tensor<2x1x?x2xf16>)
    model.output %y "prompt.out" : tensor<1x4x4xf16>
    %t = model.value "token.in" input : tensor<1x1x4xf16>
    %y2, %kv2 = model.decoder_inference "decode" decode(%t, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %kv) datatype = float16 kv_datatype = float16 effects(mutation) {batch = 1 : i64, context_tokens = 5 : i64, ffn_hidden = 8 : i64, head_dim = 2 : i64, heads = 2 : i64, hidden = 4 : i64, kv_heads = 1 : i64, query_tokens = 1 : i64} : (tensor<1x1x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x4xf16>, tensor<4x2xf16>, tensor<4x2xf16>, tensor<4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x8xf16>, tensor<8x4xf16>, tensor<2x1x?x2xf16>) -> (tensor<1x1x4xf16>, tensor<2x1x?x2xf16>)
    model.output %y2 "token.out" : tensor<1x1x4xf16>
    model.output %kv2 "kv.out" as kv_cache : tensor<2x1x?x2xf16>
    return
  }
}

// -----

// Inference: the attributes disagree with the bound strategy.
module attributes {blueprint.inference_spec = {mapping = {pp = 1 : i64, tp = 1 : i64}, model = {blocks = 1 : i64, ffn_hidden = 8 : i64, gated_mlp = false, head_dim = 2 : i64, heads = 2 : i64, hidden = 4 : i64, kv_heads = 1 : i64, name = "i", seq_len = 5 : i64}, workload = {batch = 1 : i64, datatype = "float16", generated_tokens = 1 : i64, prompt_tokens = 4 : i64}}} {
  model.header schema "blueprint.model" version "1.0"
  func.func @decoder_block_inference() {
    %0 = model.value "prompt.in" input : tensor<1x4x4xf16>
    %1 = model.value "attn.ln.scale" parameter : tensor<4xf16>
    %2 = model.value "attn.ln.bias" parameter : tensor<4xf16>
    %3 = model.value "attn.q.weight" parameter : tensor<4x4xf16>
    %4 = model.value "attn.k.weight" parameter : tensor<4x2xf16>
    %5 = model.value "attn.v.weight" parameter : tensor<4x2xf16>
    %6 = model.value "attn.proj.weight" parameter : tensor<4x4xf16>
    %7 = model.value "mlp.ln.scale" parameter : tensor<4xf16>
    %8 = model.value "mlp.ln.bias" parameter : tensor<4xf16>
    %9 = model.value "mlp.fc1.weight" parameter : tensor<4x8xf16>
    %10 = model.value "mlp.fc2.weight" parameter : tensor<8x4xf16>
    // expected-error @+1 {{'model.decoder_inference' op hidden is 2, but the strategy binding 'blueprint.inference_spec' says 4}}
    %y, %kv = model.decoder_inference "prefill" prefill(%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10) datatype = float16 kv_datatype = float16 effects(mutation) {batch = 1 : i64, context_tokens = 4 : i64, ffn_hidden = 8 : i64, head_dim = 2 : i64, heads = 2 : i64, hidden = 2 : i64, kv_heads = 1 : i64, query_tokens = 4 : i64} : (tensor<1x4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x4xf16>, tensor<4x2xf16>, tensor<4x2xf16>, tensor<4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x8xf16>, tensor<8x4xf16>) -> (tensor<1x4x4xf16>, tensor<2x1x?x2xf16>)
    model.output %y "prompt.out" : tensor<1x4x4xf16>
    %t = model.value "token.in" input : tensor<1x1x4xf16>
    %y2, %kv2 = model.decoder_inference "decode" decode(%t, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %kv) datatype = float16 kv_datatype = float16 effects(mutation) {batch = 1 : i64, context_tokens = 5 : i64, ffn_hidden = 8 : i64, head_dim = 2 : i64, heads = 2 : i64, hidden = 4 : i64, kv_heads = 1 : i64, query_tokens = 1 : i64} : (tensor<1x1x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x4xf16>, tensor<4x2xf16>, tensor<4x2xf16>, tensor<4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x8xf16>, tensor<8x4xf16>, tensor<2x1x?x2xf16>) -> (tensor<1x1x4xf16>, tensor<2x1x?x2xf16>)
    model.output %y2 "token.out" : tensor<1x1x4xf16>
    model.output %kv2 "kv.out" as kv_cache : tensor<2x1x?x2xf16>
    return
  }
}

// -----

// Inference: the decode step disagrees with its own operand types.
module {
  model.header schema "blueprint.model" version "1.0"
  func.func @decoder_block_inference() {
    %0 = model.value "prompt.in" input : tensor<1x4x4xf16>
    %1 = model.value "attn.ln.scale" parameter : tensor<4xf16>
    %2 = model.value "attn.ln.bias" parameter : tensor<4xf16>
    %3 = model.value "attn.q.weight" parameter : tensor<4x4xf16>
    %4 = model.value "attn.k.weight" parameter : tensor<4x2xf16>
    %5 = model.value "attn.v.weight" parameter : tensor<4x2xf16>
    %6 = model.value "attn.proj.weight" parameter : tensor<4x4xf16>
    %7 = model.value "mlp.ln.scale" parameter : tensor<4xf16>
    %8 = model.value "mlp.ln.bias" parameter : tensor<4xf16>
    %9 = model.value "mlp.fc1.weight" parameter : tensor<4x8xf16>
    %10 = model.value "mlp.fc2.weight" parameter : tensor<8x4xf16>
    %y, %kv = model.decoder_inference "prefill" prefill(%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10) datatype = float16 kv_datatype = float16 effects(mutation) {batch = 1 : i64, context_tokens = 4 : i64, ffn_hidden = 8 : i64, head_dim = 2 : i64, heads = 2 : i64, hidden = 4 : i64, kv_heads = 1 : i64, query_tokens = 4 : i64} : (tensor<1x4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x4xf16>, tensor<4x2xf16>, tensor<4x2xf16>, tensor<4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x8xf16>, tensor<8x4xf16>) -> (tensor<1x4x4xf16>, tensor<2x1x?x2xf16>)
    model.output %y "prompt.out" : tensor<1x4x4xf16>
    %t = model.value "token.in" input : tensor<1x1x4xf16>
    // expected-error @+1 {{'model.decoder_inference' op operand #4 (k_weight): expected tensor<4x4xf16> (hidden x kv_heads*head_dim), got tensor<4x2xf16>}}
    %y2, %kv2 = model.decoder_inference "decode" decode(%t, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %kv) datatype = float16 kv_datatype = float16 effects(mutation) {batch = 1 : i64, context_tokens = 5 : i64, ffn_hidden = 8 : i64, head_dim = 2 : i64, heads = 2 : i64, hidden = 4 : i64, kv_heads = 2 : i64, query_tokens = 1 : i64} : (tensor<1x1x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x4xf16>, tensor<4x2xf16>, tensor<4x2xf16>, tensor<4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x8xf16>, tensor<8x4xf16>, tensor<2x1x?x2xf16>) -> (tensor<1x1x4xf16>, tensor<2x1x?x2xf16>)
    model.output %y2 "token.out" : tensor<1x1x4xf16>
    model.output %kv2 "kv.out" as kv_cache : tensor<2x1x?x2xf16>
    return
  }
}

// -----

// Inference: fc1 is hidden x ffn_hidden, or twice as wide for a gated MLP.
module {
  model.header schema "blueprint.model" version "1.0"
  func.func @decoder_block_inference() {
    %0 = model.value "prompt.in" input : tensor<1x4x4xf16>
    %1 = model.value "attn.ln.scale" parameter : tensor<4xf16>
    %2 = model.value "attn.ln.bias" parameter : tensor<4xf16>
    %3 = model.value "attn.q.weight" parameter : tensor<4x4xf16>
    %4 = model.value "attn.k.weight" parameter : tensor<4x2xf16>
    %5 = model.value "attn.v.weight" parameter : tensor<4x2xf16>
    %6 = model.value "attn.proj.weight" parameter : tensor<4x4xf16>
    %7 = model.value "mlp.ln.scale" parameter : tensor<4xf16>
    %8 = model.value "mlp.ln.bias" parameter : tensor<4xf16>
    %9 = model.value "mlp.fc1.weight" parameter : tensor<4x12xf16>
    %10 = model.value "mlp.fc2.weight" parameter : tensor<8x4xf16>
    // expected-error @+1 {{'model.decoder_inference' op operand #9 (fc1_weight): expected tensor<4x8xf16> or tensor<4x16xf16> (hidden x ffn_hidden, or hidden x 2*ffn_hidden for a gated MLP), got tensor<4x12xf16>}}
    %y, %kv = model.decoder_inference "prefill" prefill(%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10) datatype = float16 kv_datatype = float16 effects(mutation) {batch = 1 : i64, context_tokens = 4 : i64, ffn_hidden = 8 : i64, head_dim = 2 : i64, heads = 2 : i64, hidden = 4 : i64, kv_heads = 1 : i64, query_tokens = 4 : i64} : (tensor<1x4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x4xf16>, tensor<4x2xf16>, tensor<4x2xf16>, tensor<4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x12xf16>, tensor<8x4xf16>) -> (tensor<1x4x4xf16>, tensor<2x1x?x2xf16>)
    model.output %y "prompt.out" : tensor<1x4x4xf16>
    %t = model.value "token.in" input : tensor<1x1x4xf16>
    %y2, %kv2 = model.decoder_inference "decode" decode(%t, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %kv) datatype = float16 kv_datatype = float16 effects(mutation) {batch = 1 : i64, context_tokens = 5 : i64, ffn_hidden = 8 : i64, head_dim = 2 : i64, heads = 2 : i64, hidden = 4 : i64, kv_heads = 1 : i64, query_tokens = 1 : i64} : (tensor<1x1x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x4xf16>, tensor<4x2xf16>, tensor<4x2xf16>, tensor<4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x12xf16>, tensor<8x4xf16>, tensor<2x1x?x2xf16>) -> (tensor<1x1x4xf16>, tensor<2x1x?x2xf16>)
    model.output %y2 "token.out" : tensor<1x1x4xf16>
    model.output %kv2 "kv.out" as kv_cache : tensor<2x1x?x2xf16>
    return
  }
}

// -----

// Inference: the cache is K and V stacked, kv_heads x head_dim wide.
module {
  model.header schema "blueprint.model" version "1.0"
  func.func @decoder_block_inference() {
    %0 = model.value "prompt.in" input : tensor<1x4x4xf16>
    %1 = model.value "attn.ln.scale" parameter : tensor<4xf16>
    %2 = model.value "attn.ln.bias" parameter : tensor<4xf16>
    %3 = model.value "attn.q.weight" parameter : tensor<4x4xf16>
    %4 = model.value "attn.k.weight" parameter : tensor<4x2xf16>
    %5 = model.value "attn.v.weight" parameter : tensor<4x2xf16>
    %6 = model.value "attn.proj.weight" parameter : tensor<4x4xf16>
    %7 = model.value "mlp.ln.scale" parameter : tensor<4xf16>
    %8 = model.value "mlp.ln.bias" parameter : tensor<4xf16>
    %9 = model.value "mlp.fc1.weight" parameter : tensor<4x8xf16>
    %10 = model.value "mlp.fc2.weight" parameter : tensor<8x4xf16>
    // expected-error @+1 {{'model.decoder_inference' op result #1 (new_kv_cache): expected tensor<2x1x?x2xf16> or tensor<2x1x4x2xf16> (2 x batch x tokens x kv_heads*head_dim), got tensor<2x1x?x4xf16>}}
    %y, %kv = model.decoder_inference "prefill" prefill(%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10) datatype = float16 kv_datatype = float16 effects(mutation) {batch = 1 : i64, context_tokens = 4 : i64, ffn_hidden = 8 : i64, head_dim = 2 : i64, heads = 2 : i64, hidden = 4 : i64, kv_heads = 1 : i64, query_tokens = 4 : i64} : (tensor<1x4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x4xf16>, tensor<4x2xf16>, tensor<4x2xf16>, tensor<4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x8xf16>, tensor<8x4xf16>) -> (tensor<1x4x4xf16>, tensor<2x1x?x4xf16>)
    model.output %y "prompt.out" : tensor<1x4x4xf16>
    %t = model.value "token.in" input : tensor<1x1x4xf16>
    %y2, %kv2 = model.decoder_inference "decode" decode(%t, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %kv) datatype = float16 kv_datatype = float16 effects(mutation) {batch = 1 : i64, context_tokens = 5 : i64, ffn_hidden = 8 : i64, head_dim = 2 : i64, heads = 2 : i64, hidden = 4 : i64, kv_heads = 1 : i64, query_tokens = 1 : i64} : (tensor<1x1x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x4xf16>, tensor<4x2xf16>, tensor<4x2xf16>, tensor<4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x8xf16>, tensor<8x4xf16>, tensor<2x1x?x4xf16>) -> (tensor<1x1x4xf16>, tensor<2x1x?x4xf16>)
    model.output %y2 "token.out" : tensor<1x1x4xf16>
    model.output %kv2 "kv.out" as kv_cache : tensor<2x1x?x4xf16>
    return
  }
}

// -----

// Inference: heads x head_dim overflows i64 (kv_heads x head_dim cannot overflow
// alone: kv_heads divides heads).
module {
  model.header schema "blueprint.model" version "1.0"
  func.func @decoder_block_inference() {
    %0 = model.value "prompt.in" input : tensor<1x4x4xf16>
    %1 = model.value "attn.ln.scale" parameter : tensor<4xf16>
    %2 = model.value "attn.ln.bias" parameter : tensor<4xf16>
    %3 = model.value "attn.q.weight" parameter : tensor<4x4xf16>
    %4 = model.value "attn.k.weight" parameter : tensor<4x2xf16>
    %5 = model.value "attn.v.weight" parameter : tensor<4x2xf16>
    %6 = model.value "attn.proj.weight" parameter : tensor<4x4xf16>
    %7 = model.value "mlp.ln.scale" parameter : tensor<4xf16>
    %8 = model.value "mlp.ln.bias" parameter : tensor<4xf16>
    %9 = model.value "mlp.fc1.weight" parameter : tensor<4x8xf16>
    %10 = model.value "mlp.fc2.weight" parameter : tensor<8x4xf16>
    // expected-error @+1 {{'model.decoder_inference' op heads x head_dim = 4611686018427387904 x 2 exceeds 2^63 - 1, the largest tensor extent}}
    %y, %kv = model.decoder_inference "prefill" prefill(%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10) datatype = float16 kv_datatype = float16 effects(mutation) {batch = 1 : i64, context_tokens = 4 : i64, ffn_hidden = 8 : i64, head_dim = 2 : i64, heads = 4611686018427387904 : i64, hidden = 4 : i64, kv_heads = 4611686018427387904 : i64, query_tokens = 4 : i64} : (tensor<1x4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x4xf16>, tensor<4x2xf16>, tensor<4x2xf16>, tensor<4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x8xf16>, tensor<8x4xf16>) -> (tensor<1x4x4xf16>, tensor<2x1x?x2xf16>)
    model.output %y "prompt.out" : tensor<1x4x4xf16>
    %t = model.value "token.in" input : tensor<1x1x4xf16>
    %y2, %kv2 = model.decoder_inference "decode" decode(%t, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %kv) datatype = float16 kv_datatype = float16 effects(mutation) {batch = 1 : i64, context_tokens = 5 : i64, ffn_hidden = 8 : i64, head_dim = 2 : i64, heads = 2 : i64, hidden = 4 : i64, kv_heads = 1 : i64, query_tokens = 1 : i64} : (tensor<1x1x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x4xf16>, tensor<4x2xf16>, tensor<4x2xf16>, tensor<4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x8xf16>, tensor<8x4xf16>, tensor<2x1x?x2xf16>) -> (tensor<1x1x4xf16>, tensor<2x1x?x2xf16>)
    model.output %y2 "token.out" : tensor<1x1x4xf16>
    model.output %kv2 "kv.out" as kv_cache : tensor<2x1x?x2xf16>
    return
  }
}

// -----

// Inference: a decode step must read the cache the prefill wrote (the decomposition
// threads that cache).
module {
  model.header schema "blueprint.model" version "1.0"
  func.func @decoder_block_inference() {
    %0 = model.value "prompt.in" input : tensor<1x4x4xf16>
    %1 = model.value "attn.ln.scale" parameter : tensor<4xf16>
    %2 = model.value "attn.ln.bias" parameter : tensor<4xf16>
    %3 = model.value "attn.q.weight" parameter : tensor<4x4xf16>
    %4 = model.value "attn.k.weight" parameter : tensor<4x2xf16>
    %5 = model.value "attn.v.weight" parameter : tensor<4x2xf16>
    %6 = model.value "attn.proj.weight" parameter : tensor<4x4xf16>
    %7 = model.value "mlp.ln.scale" parameter : tensor<4xf16>
    %8 = model.value "mlp.ln.bias" parameter : tensor<4xf16>
    %9 = model.value "mlp.fc1.weight" parameter : tensor<4x8xf16>
    %10 = model.value "mlp.fc2.weight" parameter : tensor<8x4xf16>
    %c = model.value "kv.in" kv_cache : tensor<2x1x?x2xf16>
    %y, %kv = model.decoder_inference "prefill" prefill(%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10) datatype = float16 kv_datatype = float16 effects(mutation) {batch = 1 : i64, context_tokens = 4 : i64, ffn_hidden = 8 : i64, head_dim = 2 : i64, heads = 2 : i64, hidden = 4 : i64, kv_heads = 1 : i64, query_tokens = 4 : i64} : (tensor<1x4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x4xf16>, tensor<4x2xf16>, tensor<4x2xf16>, tensor<4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x8xf16>, tensor<8x4xf16>) -> (tensor<1x4x4xf16>, tensor<2x1x?x2xf16>)
    model.output %y "prompt.out" : tensor<1x4x4xf16>
    %t = model.value "token.in" input : tensor<1x1x4xf16>
    // expected-error @+1 {{'model.decoder_inference' op operand #11 (kv_cache) must be the cache the phase before it returns ('prefill' result #1)}}
    %y2, %kv2 = model.decoder_inference "decode" decode(%t, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %c) datatype = float16 kv_datatype = float16 effects(mutation) {batch = 1 : i64, context_tokens = 5 : i64, ffn_hidden = 8 : i64, head_dim = 2 : i64, heads = 2 : i64, hidden = 4 : i64, kv_heads = 1 : i64, query_tokens = 1 : i64} : (tensor<1x1x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x4xf16>, tensor<4x2xf16>, tensor<4x2xf16>, tensor<4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x8xf16>, tensor<8x4xf16>, tensor<2x1x?x2xf16>) -> (tensor<1x1x4xf16>, tensor<2x1x?x2xf16>)
    model.output %y2 "token.out" : tensor<1x1x4xf16>
    model.output %kv2 "kv.out" as kv_cache : tensor<2x1x?x2xf16>
    return
  }
}

// -----

// Inference: the phases share the prefill's parameters.
module {
  model.header schema "blueprint.model" version "1.0"
  func.func @decoder_block_inference() {
    %0 = model.value "prompt.in" input : tensor<1x4x4xf16>
    %1 = model.value "attn.ln.scale" parameter : tensor<4xf16>
    %2 = model.value "attn.ln.bias" parameter : tensor<4xf16>
    %3 = model.value "attn.q.weight" parameter : tensor<4x4xf16>
    %4 = model.value "attn.k.weight" parameter : tensor<4x2xf16>
    %5 = model.value "attn.v.weight" parameter : tensor<4x2xf16>
    %6 = model.value "attn.proj.weight" parameter : tensor<4x4xf16>
    %7 = model.value "mlp.ln.scale" parameter : tensor<4xf16>
    %8 = model.value "mlp.ln.bias" parameter : tensor<4xf16>
    %9 = model.value "mlp.fc1.weight" parameter : tensor<4x8xf16>
    %10 = model.value "mlp.fc2.weight" parameter : tensor<8x4xf16>
    %s = model.value "other.scale" parameter : tensor<4xf16>
    %y, %kv = model.decoder_inference "prefill" prefill(%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10) datatype = float16 kv_datatype = float16 effects(mutation) {batch = 1 : i64, context_tokens = 4 : i64, ffn_hidden = 8 : i64, head_dim = 2 : i64, heads = 2 : i64, hidden = 4 : i64, kv_heads = 1 : i64, query_tokens = 4 : i64} : (tensor<1x4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x4xf16>, tensor<4x2xf16>, tensor<4x2xf16>, tensor<4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x8xf16>, tensor<8x4xf16>) -> (tensor<1x4x4xf16>, tensor<2x1x?x2xf16>)
    model.output %y "prompt.out" : tensor<1x4x4xf16>
    %t = model.value "token.in" input : tensor<1x1x4xf16>
    // expected-error @+1 {{'model.decoder_inference' op operand #1 (ln1_scale) must be the prefill's (the phases of a served block share its parameters)}}
    %y2, %kv2 = model.decoder_inference "decode" decode(%t, %s, %2, %3, %4, %5, %6, %7, %8, %9, %10, %kv) datatype = float16 kv_datatype = float16 effects(mutation) {batch = 1 : i64, context_tokens = 5 : i64, ffn_hidden = 8 : i64, head_dim = 2 : i64, heads = 2 : i64, hidden = 4 : i64, kv_heads = 1 : i64, query_tokens = 1 : i64} : (tensor<1x1x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x4xf16>, tensor<4x2xf16>, tensor<4x2xf16>, tensor<4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x8xf16>, tensor<8x4xf16>, tensor<2x1x?x2xf16>) -> (tensor<1x1x4xf16>, tensor<2x1x?x2xf16>)
    model.output %y2 "token.out" : tensor<1x1x4xf16>
    model.output %kv2 "kv.out" as kv_cache : tensor<2x1x?x2xf16>
    return
  }
}

// -----

// Inference: one prefill per function.
module {
  model.header schema "blueprint.model" version "1.0"
  func.func @decoder_block_inference() {
    %0 = model.value "prompt.in" input : tensor<1x4x4xf16>
    %1 = model.value "attn.ln.scale" parameter : tensor<4xf16>
    %2 = model.value "attn.ln.bias" parameter : tensor<4xf16>
    %3 = model.value "attn.q.weight" parameter : tensor<4x4xf16>
    %4 = model.value "attn.k.weight" parameter : tensor<4x2xf16>
    %5 = model.value "attn.v.weight" parameter : tensor<4x2xf16>
    %6 = model.value "attn.proj.weight" parameter : tensor<4x4xf16>
    %7 = model.value "mlp.ln.scale" parameter : tensor<4xf16>
    %8 = model.value "mlp.ln.bias" parameter : tensor<4xf16>
    %9 = model.value "mlp.fc1.weight" parameter : tensor<4x8xf16>
    %10 = model.value "mlp.fc2.weight" parameter : tensor<8x4xf16>
    %y, %kv = model.decoder_inference "prefill" prefill(%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10) datatype = float16 kv_datatype = float16 effects(mutation) {batch = 1 : i64, context_tokens = 4 : i64, ffn_hidden = 8 : i64, head_dim = 2 : i64, heads = 2 : i64, hidden = 4 : i64, kv_heads = 1 : i64, query_tokens = 4 : i64} : (tensor<1x4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x4xf16>, tensor<4x2xf16>, tensor<4x2xf16>, tensor<4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x8xf16>, tensor<8x4xf16>) -> (tensor<1x4x4xf16>, tensor<2x1x?x2xf16>)
    model.output %y "prompt.out" : tensor<1x4x4xf16>
    %t = model.value "token.in" input : tensor<1x1x4xf16>
    // expected-error @+1 {{'model.decoder_inference' op cannot be decomposed: a second prefill in the function of a served block (one prefill and its decode steps per function)}}
    %y2, %kv2 = model.decoder_inference "decode" prefill(%t, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10) datatype = float16 kv_datatype = float16 effects(mutation) {batch = 1 : i64, context_tokens = 1 : i64, ffn_hidden = 8 : i64, head_dim = 2 : i64, heads = 2 : i64, hidden = 4 : i64, kv_heads = 1 : i64, query_tokens = 1 : i64} : (tensor<1x1x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x4xf16>, tensor<4x2xf16>, tensor<4x2xf16>, tensor<4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4x8xf16>, tensor<8x4xf16>) -> (tensor<1x1x4xf16>, tensor<2x1x?x2xf16>)
    model.output %y2 "token.out" : tensor<1x1x4xf16>
    model.output %kv2 "kv.out" as kv_cache : tensor<2x1x?x2xf16>
    return
  }
}

// -----

// Training: an RMS norm has no bias, so `norm1` must hold the scale only.
module {
  model.header schema "blueprint.model" version "1.0"
  func.func @decoder_block() {
    %0 = model.value "block.in" activation : tensor<1x4x4xf32>
    %1 = model.value "attn.norm.scale" parameter : tensor<4xf32>
    %2 = model.value "attn.norm.bias" parameter : tensor<4xf32>
    %3 = model.value "attn.q.weight" parameter : tensor<4x4xf32>
    %6 = model.value "attn.proj.weight" parameter : tensor<4x4xf32>
    %7 = model.value "mlp.norm.scale" parameter : tensor<4xf32>
    %9 = model.value "mlp.up.weight" parameter : tensor<4x16xf32>
    %10 = model.value "mlp.down.weight" parameter : tensor<16x4xf32>
    %12 = model.value "mlp.gate.weight" parameter : tensor<4x16xf32>
    %11 = model.value "optimizer.state" optimizer_state : tensor<0xf32>
    // expected-error @+1 {{'model.decoder_training' op norm = rms_norm takes no bias in norm1(...)}}
    %y = model.decoder_training "block"(%0) norm1(%1, %2) attention(%3, %3, %3, %6) norm2(%7) mlp(%9, %10) gate(%12) state(%11) datatype = float32 norm = rms_norm optimizer = sgd lr = 0.1 effects(parameter_update) {ffn_hidden = 16 : i64, head_dim = 4 : i64, heads = 1 : i64, hidden = 4 : i64, microbatch = 1 : i64, seq_len = 4 : i64} : (tensor<1x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x16xf32>, tensor<16x4xf32>, tensor<4x16xf32>, tensor<0xf32>) -> tensor<1x4x4xf32>
    model.output %y "block.out" : tensor<1x4x4xf32>
    return
  }
}

// -----

// Training: a layer norm needs its bias in `norm2`.
module {
  model.header schema "blueprint.model" version "1.0"
  func.func @decoder_block() {
    %0 = model.value "block.in" activation : tensor<1x4x4xf32>
    %1 = model.value "attn.ln.scale" parameter : tensor<4xf32>
    %2 = model.value "attn.ln.bias" parameter : tensor<4xf32>
    %3 = model.value "attn.q.weight" parameter : tensor<4x4xf32>
    %7 = model.value "mlp.ln.scale" parameter : tensor<4xf32>
    %9 = model.value "mlp.fc1.weight" parameter : tensor<4x16xf32>
    %10 = model.value "mlp.fc2.weight" parameter : tensor<16x4xf32>
    %11 = model.value "optimizer.state" optimizer_state : tensor<0xf32>
    // expected-error @+1 {{'model.decoder_training' op norm = layer_norm needs a bias in norm2(...)}}
    %y = model.decoder_training "block"(%0) norm1(%1, %2) attention(%3, %3, %3, %3) norm2(%7) mlp(%9, %10) state(%11) datatype = float32 effects(parameter_update) {ffn_hidden = 16 : i64, head_dim = 4 : i64, heads = 1 : i64, hidden = 4 : i64, microbatch = 1 : i64, seq_len = 4 : i64} : (tensor<1x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x16xf32>, tensor<16x4xf32>, tensor<0xf32>) -> tensor<1x4x4xf32>
    model.output %y "block.out" : tensor<1x4x4xf32>
    return
  }
}

// -----

// Training: keys and values of grouped-query attention are kv_heads x
// head_dim wide (here 2 x 2 = 4, not 8).
module {
  model.header schema "blueprint.model" version "1.0"
  func.func @decoder_block() {
    %0 = model.value "block.in" activation : tensor<1x4x8xf32>
    %1 = model.value "attn.ln.scale" parameter : tensor<8xf32>
    %2 = model.value "attn.ln.bias" parameter : tensor<8xf32>
    %3 = model.value "attn.q.weight" parameter : tensor<8x8xf32>
    %7 = model.value "mlp.ln.scale" parameter : tensor<8xf32>
    %9 = model.value "mlp.fc1.weight" parameter : tensor<8x16xf32>
    %10 = model.value "mlp.fc2.weight" parameter : tensor<16x8xf32>
    %11 = model.value "optimizer.state" optimizer_state : tensor<0xf32>
    // expected-error @+1 {{'model.decoder_training' op operand #4 (k_weight): expected tensor<8x4xf32> (hidden x kv_heads*head_dim), got tensor<8x8xf32>}}
    %y = model.decoder_training "block"(%0) norm1(%1, %2) attention(%3, %3, %3, %3) norm2(%7, %2) mlp(%9, %10) state(%11) datatype = float32 kv_heads = 2 effects(parameter_update) {ffn_hidden = 16 : i64, head_dim = 2 : i64, heads = 4 : i64, hidden = 8 : i64, microbatch = 1 : i64, seq_len = 4 : i64} : (tensor<1x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<0xf32>) -> tensor<1x4x8xf32>
    model.output %y "block.out" : tensor<1x4x8xf32>
    return
  }
}
