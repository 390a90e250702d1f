// RUN: blueprint-opt %s | FileCheck %s
// Round trip: printing, re-parsing and printing again is the identity, and
// the generic form parses back to the same IR.
// RUN: blueprint-opt %s > %t.1.mlir && blueprint-opt %t.1.mlir > %t.2.mlir && diff %t.1.mlir %t.2.mlir
// RUN: blueprint-opt %s --mlir-print-op-generic | blueprint-opt | diff %t.1.mlir -

// CHECK: "model.header"() {schema_name = "blueprint.model", schema_version = "1.0"}
"model.header"() {schema_name = "blueprint.model", schema_version = "1.0"} : () -> ()

// CHECK-LABEL: func.func @primitives
func.func @primitives() {
  // CHECK: %[[X:.*]] = "model.value"() {id = "x", role = "input"} : () -> tensor<8x16xf16>
  %x = "model.value"() {id = "x", role = "input"} : () -> tensor<8x16xf16>
  // CHECK: "model.value"() {id = "w", role = "parameter"} : () -> tensor<16x32xf16>
  %w = "model.value"() {id = "w", role = "parameter"} : () -> tensor<16x32xf16>
  %g = "model.value"() {id = "gamma", role = "parameter"} : () -> tensor<16xf16>
  %b = "model.value"() {id = "beta", role = "parameter"} : () -> tensor<16xf16>
  // CHECK: "model.layer_norm"(%[[X]], %{{.*}}, %{{.*}}) {id = "ln"}
  %n = "model.layer_norm"(%x, %g, %b) {id = "ln"} : (tensor<8x16xf16>, tensor<16xf16>, tensor<16xf16>) -> tensor<8x16xf16>
  // CHECK: "model.fork"(%{{.*}}) {id = "ln.fork"} : (tensor<8x16xf16>) -> (tensor<8x16xf16>, tensor<8x16xf16>)
  %n0, %n1 = "model.fork"(%n) {id = "ln.fork"} : (tensor<8x16xf16>) -> (tensor<8x16xf16>, tensor<8x16xf16>)
  // CHECK: "model.matmul"(%{{.*}}, %{{.*}}) {id = "fc1"} : (tensor<8x16xf16>, tensor<16x32xf16>) -> tensor<8x32xf16>
  %h = "model.matmul"(%n0, %w) {id = "fc1"} : (tensor<8x16xf16>, tensor<16x32xf16>) -> tensor<8x32xf16>
  // CHECK: "model.gelu"(%{{.*}}) {id = "act"}
  %a = "model.gelu"(%h) {id = "act"} : (tensor<8x32xf16>) -> tensor<8x32xf16>
  // CHECK: "model.softmax"(%{{.*}}) {dim = 1 : i64, id = "sm"}
  %s = "model.softmax"(%a) {id = "sm", dim = 1 : i64} : (tensor<8x32xf16>) -> tensor<8x32xf16>
  // CHECK: "model.dropout"(%{{.*}}) {effects = ["random_state"], id = "drop"}
  %d = "model.dropout"(%n1) {id = "drop", effects = ["random_state"]} : (tensor<8x16xf16>) -> tensor<8x16xf16>
  // CHECK: "model.add"(%{{.*}}, %{{.*}}) {id = "residual"}
  %r = "model.add"(%d, %x) {id = "residual"} : (tensor<8x16xf16>, tensor<8x16xf16>) -> tensor<8x16xf16>
  %q = "model.value"() {id = "q", role = "activation"} : () -> tensor<4x8x2xf16>
  %k = "model.value"() {id = "k", role = "activation"} : () -> tensor<4x2x8xf16>
  // CHECK: "model.batch_matmul"(%{{.*}}, %{{.*}}) {id = "scores"} : (tensor<4x8x2xf16>, tensor<4x2x8xf16>) -> tensor<4x8x8xf16>
  %sc = "model.batch_matmul"(%q, %k) {id = "scores"} : (tensor<4x8x2xf16>, tensor<4x2x8xf16>) -> tensor<4x8x8xf16>
  // CHECK: "model.output"(%{{.*}}) {id = "out"} : (tensor<8x16xf16>) -> ()
  "model.output"(%r) {id = "out"} : (tensor<8x16xf16>) -> ()
  "model.output"(%s) {id = "out.act"} : (tensor<8x32xf16>) -> ()
  "model.output"(%sc) {id = "out.scores"} : (tensor<4x8x8xf16>) -> ()
  return
}

// CHECK-LABEL: func.func @state_and_effects
func.func @state_and_effects() {
  %w = "model.value"() {id = "w2", role = "parameter"} : () -> tensor<16x32xf16>
  %gw = "model.value"() {id = "w2.grad", role = "weight_gradient"} : () -> tensor<16x32xf16>
  %m = "model.value"() {id = "w2.m", role = "optimizer_state"} : () -> tensor<16x32xf32>
  %v = "model.value"() {id = "w2.v", role = "optimizer_state"} : () -> tensor<16x32xf32>
  %ga = "model.value"() {id = "x.grad", role = "activation_gradient"} : () -> tensor<8x16xf16>
  // CHECK: "model.optimizer_step"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {effects = ["parameter_update"], id = "adam"}
  // CHECK-SAME: -> (tensor<16x32xf16>, tensor<16x32xf32>, tensor<16x32xf32>)
  %w1, %m1, %v1 = "model.optimizer_step"(%w, %gw, %m, %v) {id = "adam", effects = ["parameter_update"]} : (tensor<16x32xf16>, tensor<16x32xf16>, tensor<16x32xf32>, tensor<16x32xf32>) -> (tensor<16x32xf16>, tensor<16x32xf32>, tensor<16x32xf32>)
  "model.output"(%w1) {id = "w2.next"} : (tensor<16x32xf16>) -> ()
  %xin = "model.value"() {id = "fc.in", role = "activation"} : () -> tensor<8x16xf16>
  %dy = "model.value"() {id = "fc.out.grad", role = "activation_gradient"} : () -> tensor<8x32xf16>
  // CHECK: "model.activation_gradient"(%{{.*}}, %{{.*}}) {id = "fc.agrad", of = "fc"} : (tensor<8x32xf16>, tensor<8x16xf16>) -> tensor<8x16xf16>
  %dx = "model.activation_gradient"(%dy, %xin) {id = "fc.agrad", of = "fc"} : (tensor<8x32xf16>, tensor<8x16xf16>) -> tensor<8x16xf16>
  // CHECK: "model.weight_gradient"(%{{.*}}, %{{.*}}) {id = "fc.wgrad", of = "fc"} : (tensor<8x32xf16>, tensor<8x16xf16>) -> tensor<16x32xf16>
  %dw = "model.weight_gradient"(%dy, %xin) {id = "fc.wgrad", of = "fc"} : (tensor<8x32xf16>, tensor<8x16xf16>) -> tensor<16x32xf16>
  // A fork's gradient sums the gradients of its results.
  // CHECK: "model.activation_gradient"(%{{.*}}, %{{.*}}, %{{.*}}) {id = "fork.agrad", of = "fork"} : (tensor<8x16xf16>, tensor<8x16xf16>, tensor<8x16xf16>) -> tensor<8x16xf16>
  %dsum = "model.activation_gradient"(%dx, %dx, %xin) {id = "fork.agrad", of = "fork"} : (tensor<8x16xf16>, tensor<8x16xf16>, tensor<8x16xf16>) -> tensor<8x16xf16>
  "model.output"(%dw) {id = "fc.w.grad"} : (tensor<16x32xf16>) -> ()
  // CHECK: "model.split"(%{{.*}}) {dim = 1 : i64, id = "w2.split"} : (tensor<16x32xf16>) -> (tensor<16x16xf16>, tensor<16x16xf16>)
  %wa, %wb = "model.split"(%w) {id = "w2.split", dim = 1 : i64} : (tensor<16x32xf16>) -> (tensor<16x16xf16>, tensor<16x16xf16>)
  // CHECK: "model.swiglu"(%{{.*}}, %{{.*}}) {id = "gating"} : (tensor<16x16xf16>, tensor<16x16xf16>) -> tensor<16x16xf16>
  %sw = "model.swiglu"(%wa, %wb) {id = "gating"} : (tensor<16x16xf16>, tensor<16x16xf16>) -> tensor<16x16xf16>
  "model.output"(%sw) {id = "gating.out"} : (tensor<16x16xf16>) -> ()
  %keys = "model.value"() {id = "keys", role = "activation"} : () -> tensor<1x4x8xf16>
  %vals = "model.value"() {id = "vals", role = "activation"} : () -> tensor<1x4x8xf16>
  // CHECK: %[[KV:.*]] = "model.kv_append"(%{{.*}}, %{{.*}}) {effects = ["mutation"], id = "kv.first"} : (tensor<1x4x8xf16>, tensor<1x4x8xf16>) -> tensor<2x1x?x8xf16>
  %kv0 = "model.kv_append"(%keys, %vals) {id = "kv.first", effects = ["mutation"]} : (tensor<1x4x8xf16>, tensor<1x4x8xf16>) -> tensor<2x1x?x8xf16>
  // CHECK: "model.kv_append"(%[[KV]], %{{.*}}, %{{.*}}) {effects = ["mutation"], id = "kv.next"}
  %kv1 = "model.kv_append"(%kv0, %keys, %vals) {id = "kv.next", effects = ["mutation"]} : (tensor<2x1x?x8xf16>, tensor<1x4x8xf16>, tensor<1x4x8xf16>) -> tensor<2x1x?x8xf16>
  // CHECK: "model.output"(%{{.*}}) {id = "kv.appended", role = "kv_cache"}
  "model.output"(%kv1) {id = "kv.appended", role = "kv_cache"} : (tensor<2x1x?x8xf16>) -> ()
  "model.output"(%dsum) {id = "fork.in.grad"} : (tensor<8x16xf16>) -> ()
  "model.output"(%ga) {id = "x.grad.out"} : (tensor<8x16xf16>) -> ()
  return
}

// CHECK-LABEL: func.func @coarse
func.func @coarse() {
  %x = "model.value"() {id = "block.in", role = "activation"} : () -> tensor<4x2048x64xf16>
  %g1 = "model.value"() {id = "ln1.scale", role = "parameter"} : () -> tensor<64xf16>
  %b1 = "model.value"() {id = "ln1.bias", role = "parameter"} : () -> tensor<64xf16>
  %wq = "model.value"() {id = "attn.q", role = "parameter"} : () -> tensor<64x64xf16>
  %wk = "model.value"() {id = "attn.k", role = "parameter"} : () -> tensor<64x32xf16>
  %wv = "model.value"() {id = "attn.v", role = "parameter"} : () -> tensor<64x32xf16>
  %wo = "model.value"() {id = "attn.proj", role = "parameter"} : () -> tensor<64x64xf16>
  %g2 = "model.value"() {id = "ln2.scale", role = "parameter"} : () -> tensor<64xf16>
  %b2 = "model.value"() {id = "ln2.bias", role = "parameter"} : () -> tensor<64xf16>
  %w1 = "model.value"() {id = "mlp.fc1", role = "parameter"} : () -> tensor<64x256xf16>
  %w2 = "model.value"() {id = "mlp.fc2", role = "parameter"} : () -> tensor<256x64xf16>
  %opt = "model.value"() {id = "adam.state", role = "optimizer_state"} : () -> tensor<148224xf32>
  // CHECK: "model.decoder_training"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {datatype = "float16", effects = ["parameter_update", "random_state"], ffn_hidden = 256 : i64, head_dim = 16 : i64, heads = 4 : i64, hidden = 64 : i64, id = "block", microbatch = 4 : i64, seq_len = 2048 : i64}
  %y = "model.decoder_training"(%x, %g1, %b1, %wq, %wk, %wv, %wo, %g2, %b2, %w1, %w2, %opt) {id = "block", hidden = 64 : i64, ffn_hidden = 256 : i64, seq_len = 2048 : i64, heads = 4 : i64, head_dim = 16 : i64, microbatch = 4 : i64, datatype = "float16", effects = ["parameter_update", "random_state"]} : (tensor<4x2048x64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64x64xf16>, tensor<64x32xf16>, tensor<64x32xf16>, tensor<64x64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64x256xf16>, tensor<256x64xf16>, tensor<148224xf32>) -> tensor<4x2048x64xf16>
  "model.output"(%y) {id = "block.out"} : (tensor<4x2048x64xf16>) -> ()
  %t = "model.value"() {id = "prompt", role = "input"} : () -> tensor<1x8x64xf16>
  // CHECK: "model.decoder_inference"({{.*}}) {batch = 1 : i64, context_tokens = 8 : i64, datatype = "float16", effects = ["mutation"], ffn_hidden = 256 : i64, head_dim = 16 : i64, heads = 4 : i64, hidden = 64 : i64, id = "prefill", kv_datatype = "float16", kv_heads = 2 : i64, phase = "prefill", query_tokens = 8 : i64}
  // CHECK-SAME: -> (tensor<1x8x64xf16>, tensor<2x1x8x32xf16>)
  %p, %kv0 = "model.decoder_inference"(%t, %g1, %b1, %wq, %wk, %wv, %wo, %g2, %b2, %w1, %w2) {id = "prefill", phase = "prefill", hidden = 64 : i64, ffn_hidden = 256 : i64, heads = 4 : i64, kv_heads = 2 : i64, head_dim = 16 : i64, batch = 1 : i64, query_tokens = 8 : i64, context_tokens = 8 : i64, datatype = "float16", kv_datatype = "float16", effects = ["mutation"]} : (tensor<1x8x64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64x64xf16>, tensor<64x32xf16>, tensor<64x32xf16>, tensor<64x64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64x256xf16>, tensor<256x64xf16>) -> (tensor<1x8x64xf16>, tensor<2x1x8x32xf16>)
  %tok = "model.value"() {id = "next", role = "input"} : () -> tensor<1x1x64xf16>
  // CHECK: "model.decoder_inference"({{.*}}) {{.*}}phase = "decode"
  // CHECK-SAME: tensor<2x1x8x32xf16>) -> (tensor<1x1x64xf16>, tensor<2x1x9x32xf16>)
  %d, %kv1 = "model.decoder_inference"(%tok, %g1, %b1, %wq, %wk, %wv, %wo, %g2, %b2, %w1, %w2, %kv0) {id = "decode", phase = "decode", hidden = 64 : i64, ffn_hidden = 256 : i64, heads = 4 : i64, kv_heads = 2 : i64, head_dim = 16 : i64, batch = 1 : i64, query_tokens = 1 : i64, context_tokens = 9 : i64, datatype = "float16", kv_datatype = "float16", effects = ["mutation"]} : (tensor<1x1x64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64x64xf16>, tensor<64x32xf16>, tensor<64x32xf16>, tensor<64x64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64x256xf16>, tensor<256x64xf16>, tensor<2x1x8x32xf16>) -> (tensor<1x1x64xf16>, tensor<2x1x9x32xf16>)
  "model.output"(%p) {id = "prompt.out"} : (tensor<1x8x64xf16>) -> ()
  "model.output"(%d) {id = "next.out"} : (tensor<1x1x64xf16>) -> ()
  "model.output"(%kv1) {id = "kv.out"} : (tensor<2x1x9x32xf16>) -> ()
  return
}
