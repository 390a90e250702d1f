// Every model op in the custom form: printing, re-parsing and printing again
// is the identity, and the generic form parses back to the same IR.
// RUN: blueprint-opt %s | blueprint-opt | FileCheck %s
// RUN: blueprint-opt %s > %t.1.mlir && blueprint-opt %t.1.mlir > %t.2.mlir && diff %t.1.mlir %t.2.mlir
// The generic form (closed choices as `i32` cases) round-trips too.
// RUN: blueprint-opt %s --mlir-print-op-generic > %t.generic.mlir
// RUN: FileCheck %s --check-prefix=GENERIC < %t.generic.mlir
// RUN: blueprint-opt %t.generic.mlir | diff %t.1.mlir -

// CHECK: model.header schema "blueprint.model" version "1.0"{{$}}
// GENERIC: "model.header"() {schema_name = "blueprint.model", schema_version = "1.0"} : () -> ()
model.header schema "blueprint.model" version "1.0"

// CHECK-LABEL: func.func @primitives
func.func @primitives() {
  // CHECK: %[[X:.*]] = model.value "x" input : tensor<8x16xf16>
  // GENERIC: "model.value"() {id = "x", role = 6 : i32} : () -> tensor<8x16xf16>
  %x = model.value "x" input : tensor<8x16xf16>
  // CHECK: %[[W:.*]] = model.value "w" parameter : tensor<16x32xf16>
  // GENERIC: "model.value"() {id = "w", role = 0 : i32} : () -> tensor<16x32xf16>
  %w = model.value "w" parameter : tensor<16x32xf16>
  // CHECK: %[[G:.*]] = model.value "gamma" parameter : tensor<16xf16>
  %g = model.value "gamma" parameter : tensor<16xf16>
  // CHECK: %[[B:.*]] = model.value "beta" parameter : tensor<16xf16>
  %b = model.value "beta" parameter : tensor<16xf16>
  // CHECK: %[[N:.*]] = model.layer_norm "ln"(%[[X]], %[[G]], %[[B]]) eps = 1.000000e-05 : (tensor<8x16xf16>, tensor<16xf16>, tensor<16xf16>) -> tensor<8x16xf16>
  // GENERIC: "model.layer_norm"(%{{.*}}, %{{.*}}, %{{.*}}) {eps = 1.000000e-05 : f64, id = "ln"}
  %n = model.layer_norm "ln"(%x, %g, %b) eps = 1.0e-5 : (tensor<8x16xf16>, tensor<16xf16>, tensor<16xf16>) -> tensor<8x16xf16>
  // Without `eps`, a norm's epsilon is 1e-5.
  // CHECK: model.layer_norm "ln.default"(%[[X]], %[[G]], %[[B]]) : (tensor<8x16xf16>
  %nd = model.layer_norm "ln.default"(%x, %g, %b) : (tensor<8x16xf16>, tensor<16xf16>, tensor<16xf16>) -> tensor<8x16xf16>
  // CHECK: model.rms_norm "rms"(%[[X]], %[[G]]) eps = 9.9999999999999995E-7 : (tensor<8x16xf16>, tensor<16xf16>) -> tensor<8x16xf16>
  %rms = model.rms_norm "rms"(%x, %g) eps = 1.0e-6 : (tensor<8x16xf16>, tensor<16xf16>) -> tensor<8x16xf16>
  model.output %nd "out.ln.default" : tensor<8x16xf16>
  model.output %rms "out.rms" : tensor<8x16xf16>
  // CHECK: %[[F:.*]]:2 = model.fork "ln.fork"(%[[N]]) : (tensor<8x16xf16>) -> (tensor<8x16xf16>, tensor<8x16xf16>)
  %n0, %n1 = model.fork "ln.fork"(%n) : (tensor<8x16xf16>) -> (tensor<8x16xf16>, tensor<8x16xf16>)
  // CHECK: %[[H:.*]] = model.matmul "fc1"(%[[F]]#0, %[[W]]) : (tensor<8x16xf16>, tensor<16x32xf16>) -> tensor<8x32xf16>
  %h = model.matmul "fc1"(%n0, %w) : (tensor<8x16xf16>, tensor<16x32xf16>) -> tensor<8x32xf16>
  // CHECK: %[[A:.*]] = model.gelu "act"(%[[H]]) : (tensor<8x32xf16>) -> tensor<8x32xf16>
  %a = model.gelu "act"(%h) : (tensor<8x32xf16>) -> tensor<8x32xf16>
  // CHECK: model.relu "act.relu"(%[[H]]) : (tensor<8x32xf16>) -> tensor<8x32xf16>
  // GENERIC: "model.relu"(%{{.*}}) {id = "act.relu"} : (tensor<8x32xf16>) -> tensor<8x32xf16>
  %a_relu = model.relu "act.relu"(%h) : (tensor<8x32xf16>) -> tensor<8x32xf16>
  // CHECK: model.silu "act.silu"(%[[H]]) : (tensor<8x32xf16>) -> tensor<8x32xf16>
  // GENERIC: "model.silu"(%{{.*}}) {id = "act.silu"} : (tensor<8x32xf16>) -> tensor<8x32xf16>
  %a_silu = model.silu "act.silu"(%h) : (tensor<8x32xf16>) -> tensor<8x32xf16>
  // CHECK: %[[BIAS:.*]] = model.value "fc1.bias" parameter : tensor<32xf16>
  %bias = model.value "fc1.bias" parameter : tensor<32xf16>
  // CHECK: model.bias_add "fc1.bias_add"(%[[H]], %[[BIAS]]) : (tensor<8x32xf16>, tensor<32xf16>) -> tensor<8x32xf16>
  // GENERIC: "model.bias_add"(%{{.*}}, %{{.*}}) {id = "fc1.bias_add"} : (tensor<8x32xf16>, tensor<32xf16>) -> tensor<8x32xf16>
  %biased = model.bias_add "fc1.bias_add"(%h, %bias) : (tensor<8x32xf16>, tensor<32xf16>) -> tensor<8x32xf16>
  // CHECK: %[[S:.*]] = model.softmax "sm"(%[[A]]) dim = 1 : (tensor<8x32xf16>) -> tensor<8x32xf16>
  // GENERIC: "model.softmax"(%{{.*}}) {dim = 1 : i64, id = "sm"}
  %s = model.softmax "sm"(%a) dim = 1 : (tensor<8x32xf16>) -> tensor<8x32xf16>
  // CHECK: %[[D:.*]] = model.dropout "drop"(%[[F]]#1) p = 1.000000e-01 effects(random_state) : (tensor<8x16xf16>) -> tensor<8x16xf16>
  // GENERIC: "model.dropout"(%{{.*}}) {effects = 2 : i32, id = "drop", p = 1.000000e-01 : f64}
  %d = model.dropout "drop"(%n1) p = 0.1 effects(random_state) : (tensor<8x16xf16>) -> tensor<8x16xf16>
  // CHECK: %[[R:.*]] = model.add "residual"(%[[D]], %[[X]]) : (tensor<8x16xf16>, tensor<8x16xf16>) -> tensor<8x16xf16>
  %r = model.add "residual"(%d, %x) : (tensor<8x16xf16>, tensor<8x16xf16>) -> tensor<8x16xf16>
  // CHECK: %[[Q:.*]] = model.value "q" activation : tensor<4x8x2xf16>
  %q = model.value "q" activation : tensor<4x8x2xf16>
  // CHECK: %[[K:.*]] = model.value "k" activation : tensor<4x2x8xf16>
  %k = model.value "k" activation : tensor<4x2x8xf16>
  // CHECK: %[[SC:.*]] = model.batch_matmul "scores"(%[[Q]], %[[K]]) : (tensor<4x8x2xf16>, tensor<4x2x8xf16>) -> tensor<4x8x8xf16>
  %sc = model.batch_matmul "scores"(%q, %k) : (tensor<4x8x2xf16>, tensor<4x2x8xf16>) -> tensor<4x8x8xf16>
  // Attention with an explicit head layout: 4 query heads over 2 key/value
  // heads of width 4, causal; RoPE on queries and keys.
  // CHECK: %[[AQ:.*]] = model.value "heads.q" activation : tensor<2x8x16xf32>
  %aq = model.value "heads.q" activation : tensor<2x8x16xf32>
  // CHECK: %[[AK:.*]] = model.value "heads.k" activation : tensor<2x8x8xf32>
  %ak = model.value "heads.k" activation : tensor<2x8x8xf32>
  // CHECK: %[[QR:.*]] = model.rope "attn.q.rope"(%[[AQ]]) heads = 4 head_dim = 4 theta = 1.000000e+04 : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  // GENERIC: "model.rope"(%{{.*}}) {head_dim = 4 : i64, heads = 4 : i64, id = "attn.q.rope", theta = 1.000000e+04 : f64}
  %qr = model.rope "attn.q.rope"(%aq) heads = 4 head_dim = 4 theta = 10000.0 : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  // CHECK: %[[AS:.*]] = model.attention_scores "attn.scores"(%[[QR]], %[[AK]]) heads = 4 kv_heads = 2 head_dim = 4 scale = 5.000000e-01 causal : (tensor<2x8x16xf32>, tensor<2x8x8xf32>) -> tensor<2x4x8x8xf32>
  // GENERIC: "model.attention_scores"(%{{.*}}, %{{.*}}) {causal, head_dim = 4 : i64, heads = 4 : i64, id = "attn.scores", kv_heads = 2 : i64, scale = 5.000000e-01 : f64}
  %as = model.attention_scores "attn.scores"(%qr, %ak) heads = 4 kv_heads = 2 head_dim = 4 scale = 0.5 causal : (tensor<2x8x16xf32>, tensor<2x8x8xf32>) -> tensor<2x4x8x8xf32>
  // Without `causal`, every key is attended.
  // CHECK: model.attention_scores "attn.scores.full"(%[[QR]], %[[AK]]) heads = 4 kv_heads = 2 head_dim = 4 scale = 5.000000e-01 : (
  %af = model.attention_scores "attn.scores.full"(%qr, %ak) heads = 4 kv_heads = 2 head_dim = 4 scale = 0.5 : (tensor<2x8x16xf32>, tensor<2x8x8xf32>) -> tensor<2x4x8x8xf32>
  // CHECK: %[[AC:.*]] = model.attention_context "attn.context"(%[[AS]], %[[AK]]) heads = 4 kv_heads = 2 head_dim = 4 : (tensor<2x4x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x16xf32>
  // GENERIC: "model.attention_context"(%{{.*}}, %{{.*}}) {head_dim = 4 : i64, heads = 4 : i64, id = "attn.context", kv_heads = 2 : i64}
  %ac = model.attention_context "attn.context"(%as, %ak) heads = 4 kv_heads = 2 head_dim = 4 : (tensor<2x4x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x16xf32>
  // CHECK: model.swiglu "mlp.swiglu"(%[[AQ]], %[[QR]]) : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %sw = model.swiglu "mlp.swiglu"(%aq, %qr) : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  model.output %ac "out.context" : tensor<2x8x16xf32>
  model.output %af "out.scores.full" : tensor<2x4x8x8xf32>
  model.output %sw "out.swiglu" : tensor<2x8x16xf32>
  // CHECK: model.output %[[R]] "out" : tensor<8x16xf16>
  // GENERIC: "model.output"(%{{.*}}) {id = "out"} : (tensor<8x16xf16>) -> ()
  model.output %r "out" : tensor<8x16xf16>
  // CHECK: model.output %[[S]] "out.act" : tensor<8x32xf16>
  model.output %s "out.act" : tensor<8x32xf16>
  // CHECK: model.output %[[SC]] "out.scores" : tensor<4x8x8xf16>
  model.output %sc "out.scores" : tensor<4x8x8xf16>
  return
}

// CHECK-LABEL: func.func @state_and_effects
func.func @state_and_effects() {
  // CHECK: %[[W:.*]] = model.value "w2" parameter : tensor<16x32xf16>
  %w = model.value "w2" parameter : tensor<16x32xf16>
  // CHECK: %[[GW:.*]] = model.value "w2.grad" weight_gradient : tensor<16x32xf16>
  %gw = model.value "w2.grad" weight_gradient : tensor<16x32xf16>
  // CHECK: %[[MW:.*]] = model.value "w2.master" optimizer_state : tensor<16x32xf32>
  %mw = model.value "w2.master" optimizer_state : tensor<16x32xf32>
  // CHECK: %[[M:.*]] = model.value "w2.m" optimizer_state : tensor<16x32xf32>
  %m = model.value "w2.m" optimizer_state : tensor<16x32xf32>
  // CHECK: %[[V:.*]] = model.value "w2.v" optimizer_state : tensor<16x32xf32>
  %v = model.value "w2.v" optimizer_state : tensor<16x32xf32>
  // CHECK: %[[GA:.*]] = model.value "x.grad" activation_gradient : tensor<8x16xf16>
  %ga = model.value "x.grad" activation_gradient : tensor<8x16xf16>
  // Adam below fp32: the fp32 master copy and two moments of state in and out.
  // CHECK: %[[W1:.*]], %{{.*}}:3 = model.optimizer_step "adam"(%[[W]], %[[GW]], %[[MW]], %[[M]], %[[V]]) adam lr = 1.000000e-03 beta1 = 9.000000e-01 beta2 = 0.99899999999999999 eps = 1.000000e-08 step = 3 effects(parameter_update) : (tensor<16x32xf16>, tensor<16x32xf16>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) -> (tensor<16x32xf16>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>)
  // GENERIC: "model.optimizer_step"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, effects = 1 : i32, eps = 1.000000e-08 : f64, id = "adam", kind = 1 : i32, lr = 1.000000e-03 : f64, step = 3 : i64}
  %w1, %mw1, %m1, %v1 = model.optimizer_step "adam"(%w, %gw, %mw, %m, %v) adam lr = 1.0e-3 beta1 = 0.9 beta2 = 0.999 eps = 1.0e-8 step = 3 effects(parameter_update) : (tensor<16x32xf16>, tensor<16x32xf16>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) -> (tensor<16x32xf16>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>)
  // CHECK: model.output %[[W1]] "w2.next" as parameter : tensor<16x32xf16>
  model.output %w1 "w2.next" as parameter : tensor<16x32xf16>
  // Plain SGD at fp32: no state.
  // CHECK: %[[WS:.*]] = model.value "w3" parameter : tensor<16x32xf32>
  %ws = model.value "w3" parameter : tensor<16x32xf32>
  // CHECK: %[[GS:.*]] = model.value "w3.grad" weight_gradient : tensor<16x32xf32>
  %gs = model.value "w3.grad" weight_gradient : tensor<16x32xf32>
  // CHECK: %[[W2:.*]] = model.optimizer_step "sgd"(%[[WS]], %[[GS]]) sgd lr = 1.000000e-02 effects(parameter_update) : (tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<16x32xf32>
  %w2 = model.optimizer_step "sgd"(%ws, %gs) sgd lr = 0.01 effects(parameter_update) : (tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<16x32xf32>
  model.output %w2 "w3.next" as parameter : tensor<16x32xf32>
  // CHECK: %[[XIN:.*]] = model.value "fc.in" activation : tensor<8x16xf16>
  %xin = model.value "fc.in" activation : tensor<8x16xf16>
  // The forward ops the gradients below name (`of`).
  %g2 = model.value "fc.ln.scale" parameter : tensor<16xf16>
  %b2 = model.value "fc.ln.bias" parameter : tensor<16xf16>
  %fc = model.matmul "fc"(%xin, %w) : (tensor<8x16xf16>, tensor<16x32xf16>) -> tensor<8x32xf16>
  %lnf = model.layer_norm "ln2"(%xin, %g2, %b2) : (tensor<8x16xf16>, tensor<16xf16>, tensor<16xf16>) -> tensor<8x16xf16>
  %fk:2 = model.fork "fork"(%xin) : (tensor<8x16xf16>) -> (tensor<8x16xf16>, tensor<8x16xf16>)
  model.output %fc "fc.out" : tensor<8x32xf16>
  model.output %lnf "ln2.out" : tensor<8x16xf16>
  model.output %fk#0 "fork.0" : tensor<8x16xf16>
  model.output %fk#1 "fork.1" : tensor<8x16xf16>
  // CHECK: %[[DY:.*]] = model.value "fc.out.grad" activation_gradient : tensor<8x32xf16>
  %dy = model.value "fc.out.grad" activation_gradient : tensor<8x32xf16>
  // CHECK: %[[DX:.*]] = model.activation_gradient "fc.agrad" of "fc"(%[[DY]]) wrt %[[XIN]] : (tensor<8x32xf16>, tensor<8x16xf16>) -> tensor<8x16xf16>
  // GENERIC: "model.activation_gradient"(%{{.*}}, %{{.*}}) {id = "fc.agrad", of = "fc"} : (tensor<8x32xf16>, tensor<8x16xf16>) -> tensor<8x16xf16>
  %dx = model.activation_gradient "fc.agrad" of "fc"(%dy) wrt %xin : (tensor<8x32xf16>, tensor<8x16xf16>) -> tensor<8x16xf16>
  // CHECK: %[[DW:.*]] = model.weight_gradient "fc.wgrad" of "fc"(%[[DY]]) wrt %[[XIN]] : (tensor<8x32xf16>, tensor<8x16xf16>) -> tensor<16x32xf16>
  %dw = model.weight_gradient "fc.wgrad" of "fc"(%dy) wrt %xin : (tensor<8x32xf16>, tensor<8x16xf16>) -> tensor<16x32xf16>
  // A layer norm's weight gradient has two results (scale and bias).
  // CHECK: %{{.*}}:2 = model.weight_gradient "ln2.wgrad" of "ln2"(%[[DX]]) wrt %[[XIN]] : (tensor<8x16xf16>, tensor<8x16xf16>) -> (tensor<16xf16>, tensor<16xf16>)
  %dg, %db = model.weight_gradient "ln2.wgrad" of "ln2"(%dx) wrt %xin : (tensor<8x16xf16>, tensor<8x16xf16>) -> (tensor<16xf16>, tensor<16xf16>)
  model.output %dg "ln2.scale.grad" : tensor<16xf16>
  model.output %db "ln2.bias.grad" : tensor<16xf16>
  // A fork's gradient sums the gradients of its results.
  // CHECK: %[[DSUM:.*]] = model.activation_gradient "fork.agrad" of "fork"(%[[DX]], %[[DX]]) wrt %[[XIN]] : (tensor<8x16xf16>, tensor<8x16xf16>, tensor<8x16xf16>) -> tensor<8x16xf16>
  %dsum = model.activation_gradient "fork.agrad" of "fork"(%dx, %dx) wrt %xin : (tensor<8x16xf16>, tensor<8x16xf16>, tensor<8x16xf16>) -> tensor<8x16xf16>
  // CHECK: model.output %[[DW]] "fc.w.grad" : tensor<16x32xf16>
  model.output %dw "fc.w.grad" : tensor<16x32xf16>
  // CHECK: %[[P:.*]]:2 = model.split "w2.split"(%[[W]]) dim = 1 : (tensor<16x32xf16>) -> (tensor<16x16xf16>, tensor<16x16xf16>)
  %wa, %wb = model.split "w2.split"(%w) dim = 1 : (tensor<16x32xf16>) -> (tensor<16x16xf16>, tensor<16x16xf16>)
  // CHECK: %[[SW:.*]] = model.swiglu "gating"(%[[P]]#0, %[[P]]#1) : (tensor<16x16xf16>, tensor<16x16xf16>) -> tensor<16x16xf16>
  %sw = model.swiglu "gating"(%wa, %wb) : (tensor<16x16xf16>, tensor<16x16xf16>) -> tensor<16x16xf16>
  model.output %sw "gating.out" : tensor<16x16xf16>
  // CHECK: %[[KEYS:.*]] = model.value "keys" activation : tensor<1x4x8xf16>
  %keys = model.value "keys" activation : tensor<1x4x8xf16>
  // CHECK: %[[VALS:.*]] = model.value "vals" activation : tensor<1x4x8xf16>
  %vals = model.value "vals" activation : tensor<1x4x8xf16>
  // CHECK: %[[KV0:.*]] = model.value "kv.cache" kv_cache : tensor<2x1x?x8xf16>
  // GENERIC: %[[GKV0:.*]] = "model.value"() {id = "kv.cache", role = 5 : i32}
  %kv0 = model.value "kv.cache" kv_cache : tensor<2x1x?x8xf16>
  // An append to an existing cache (the append that starts a cache has no
  // `cache` operand: kv-append-fresh.mlir).
  // CHECK: %[[KV1:.*]] = model.kv_append "kv.next"(%[[KEYS]], %[[VALS]]) cache(%[[KV0]] : tensor<2x1x?x8xf16>) effects(mutation) : (tensor<1x4x8xf16>, tensor<1x4x8xf16>) -> tensor<2x1x?x8xf16>
  // The generic form lists the cache first (the ODS operand order).
  // GENERIC: "model.kv_append"(%[[GKV0]], %{{.*}}, %{{.*}}) {effects = 4 : i32, id = "kv.next"}
  %kv1 = model.kv_append "kv.next"(%keys, %vals) cache(%kv0 : tensor<2x1x?x8xf16>) effects(mutation) : (tensor<1x4x8xf16>, tensor<1x4x8xf16>) -> tensor<2x1x?x8xf16>
  // CHECK: model.output %[[KV1]] "kv.appended" as kv_cache : tensor<2x1x?x8xf16>
  // GENERIC: "model.output"(%{{.*}}) {id = "kv.appended", role = 5 : i32} : (tensor<2x1x?x8xf16>) -> ()
  model.output %kv1 "kv.appended" as kv_cache : tensor<2x1x?x8xf16>
  // CHECK: model.output %[[DSUM]] "fork.in.grad" : tensor<8x16xf16>
  model.output %dsum "fork.in.grad" : tensor<8x16xf16>
  // CHECK: model.output %[[GA]] "x.grad.out" as activation_gradient : tensor<8x16xf16>
  model.output %ga "x.grad.out" as activation_gradient : tensor<8x16xf16>
  // Several effects at once are one quoted `|`-separated list.
  // CHECK: model.value "scratch" activation effects("random_state|allocation") : tensor<4xf16>
  // GENERIC: "model.value"() {effects = 10 : i32, id = "scratch", role = 1 : i32} : () -> tensor<4xf16>
  %scratch = model.value "scratch" activation effects("random_state|allocation") : tensor<4xf16>
  model.output %scratch "scratch.out" : tensor<4xf16>
  return
}

// CHECK-LABEL: func.func @coarse
func.func @coarse() {
  // CHECK: %[[X:.*]] = model.value "block.in" activation : tensor<4x2048x64xf16>
  %x = model.value "block.in" activation : tensor<4x2048x64xf16>
  %g1 = model.value "ln1.scale" parameter : tensor<64xf16>
  %b1 = model.value "ln1.bias" parameter : tensor<64xf16>
  %wq = model.value "attn.q" parameter : tensor<64x64xf16>
  %wk = model.value "attn.k" parameter : tensor<64x32xf16>
  %wv = model.value "attn.v" parameter : tensor<64x32xf16>
  %wo = model.value "attn.proj" parameter : tensor<64x64xf16>
  %g2 = model.value "norm2.scale" parameter : tensor<64xf16>
  %b2 = model.value "norm2.bias" parameter : tensor<64xf16>
  %w1 = model.value "mlp.fc1" parameter : tensor<64x256xf16>
  %w2 = model.value "mlp.fc2" parameter : tensor<256x64xf16>
  // CHECK: %[[OPT:.*]] = model.value "adam.state" optimizer_state : tensor<148224xf32>
  %opt = model.value "adam.state" optimizer_state : tensor<148224xf32>
  // CHECK: %[[Y:.*]] = model.decoder_training "block"(%[[X]]) norm1(%{{.*}}, %{{.*}}) attention(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) norm2(%{{.*}}, %{{.*}}) mlp(%{{.*}}, %{{.*}}) state(%[[OPT]]) datatype = float16 effects("parameter_update|random_state") {ffn_hidden = 256 : i64, head_dim = 16 : i64, heads = 4 : i64, hidden = 64 : i64, microbatch = 4 : i64, seq_len = 2048 : i64} : (tensor<4x2048x64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64x64xf16>, tensor<64x32xf16>, tensor<64x32xf16>, tensor<64x64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64x256xf16>, tensor<256x64xf16>, tensor<148224xf32>) -> tensor<4x2048x64xf16>
  // GENERIC: "model.decoder_training"({{.*}}) {datatype = 1 : i32, effects = 3 : i32, ffn_hidden = 256 : i64, head_dim = 16 : i64, heads = 4 : i64, hidden = 64 : i64, id = "block", microbatch = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1>, seq_len = 2048 : i64}
  %y = model.decoder_training "block"(%x) norm1(%g1, %b1) attention(%wq, %wk, %wv, %wo) norm2(%g2, %b2) mlp(%w1, %w2) state(%opt) datatype = float16 effects("parameter_update|random_state") {hidden = 64 : i64, ffn_hidden = 256 : i64, seq_len = 2048 : i64, heads = 4 : i64, head_dim = 16 : i64, microbatch = 4 : i64} : (tensor<4x2048x64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64x64xf16>, tensor<64x32xf16>, tensor<64x32xf16>, tensor<64x64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64x256xf16>, tensor<256x64xf16>, tensor<148224xf32>) -> tensor<4x2048x64xf16>
  // CHECK: model.output %[[Y]] "block.out" : tensor<4x2048x64xf16>
  model.output %y "block.out" : tensor<4x2048x64xf16>
  // CHECK: %[[T:.*]] = model.value "prompt" input : tensor<1x8x64xf16>
  %t = model.value "prompt" input : tensor<1x8x64xf16>
  // CHECK: %[[P:.*]], %[[KV0:.*]] = model.decoder_inference "prefill" prefill(%[[T]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) datatype = float16 kv_datatype = float16 effects(mutation) {batch = 1 : i64, context_tokens = 8 : i64, ffn_hidden = 256 : i64, head_dim = 16 : i64, heads = 4 : i64, hidden = 64 : i64, kv_heads = 2 : i64, query_tokens = 8 : i64}
  // CHECK-SAME: : (tensor<1x8x64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64x64xf16>, tensor<64x32xf16>, tensor<64x32xf16>, tensor<64x64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64x256xf16>, tensor<256x64xf16>) -> (tensor<1x8x64xf16>, tensor<2x1x8x32xf16>)
  // The inference phase is its own enum (prefill = 0, decode = 1).
  // GENERIC: "model.decoder_inference"({{.*}}) {batch = 1 : i64, context_tokens = 8 : i64, datatype = 1 : i32, effects = 4 : i32, ffn_hidden = 256 : i64, head_dim = 16 : i64, heads = 4 : i64, hidden = 64 : i64, id = "prefill", kv_datatype = 1 : i32, kv_heads = 2 : i64, phase = 0 : i32, query_tokens = 8 : i64}
  %p, %kv0 = model.decoder_inference "prefill" prefill(%t, %g1, %b1, %wq, %wk, %wv, %wo, %g2, %b2, %w1, %w2) datatype = float16 kv_datatype = float16 effects(mutation) {hidden = 64 : i64, ffn_hidden = 256 : i64, heads = 4 : i64, kv_heads = 2 : i64, head_dim = 16 : i64, batch = 1 : i64, query_tokens = 8 : i64, context_tokens = 8 : i64} : (tensor<1x8x64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64x64xf16>, tensor<64x32xf16>, tensor<64x32xf16>, tensor<64x64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64x256xf16>, tensor<256x64xf16>) -> (tensor<1x8x64xf16>, tensor<2x1x8x32xf16>)
  // CHECK: %[[TOK:.*]] = model.value "next" input : tensor<1x1x64xf16>
  %tok = model.value "next" input : tensor<1x1x64xf16>
  // CHECK: %[[D:.*]], %[[KV1:.*]] = model.decoder_inference "decode" decode(%[[TOK]], {{.*}}, %[[KV0]]) datatype = float16 kv_datatype = bfloat16 effects(mutation) {batch = 1 : i64, context_tokens = 9 : i64, ffn_hidden = 256 : i64, head_dim = 16 : i64, heads = 4 : i64, hidden = 64 : i64, kv_heads = 2 : i64, query_tokens = 1 : i64}
  // CHECK-SAME: tensor<2x1x8x32xf16>) -> (tensor<1x1x64xf16>, tensor<2x1x9x32xf16>)
  // GENERIC: "model.decoder_inference"({{.*}}) {{{.*}}kv_datatype = 2 : i32, kv_heads = 2 : i64, phase = 1 : i32, query_tokens = 1 : i64}
  %d, %kv1 = model.decoder_inference "decode" decode(%tok, %g1, %b1, %wq, %wk, %wv, %wo, %g2, %b2, %w1, %w2, %kv0) datatype = float16 kv_datatype = bfloat16 effects(mutation) {hidden = 64 : i64, ffn_hidden = 256 : i64, heads = 4 : i64, kv_heads = 2 : i64, head_dim = 16 : i64, batch = 1 : i64, query_tokens = 1 : i64, context_tokens = 9 : i64} : (tensor<1x1x64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64x64xf16>, tensor<64x32xf16>, tensor<64x32xf16>, tensor<64x64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64x256xf16>, tensor<256x64xf16>, tensor<2x1x8x32xf16>) -> (tensor<1x1x64xf16>, tensor<2x1x9x32xf16>)
  // CHECK: model.output %[[P]] "prompt.out" : tensor<1x8x64xf16>
  model.output %p "prompt.out" : tensor<1x8x64xf16>
  // CHECK: model.output %[[D]] "next.out" : tensor<1x1x64xf16>
  model.output %d "next.out" : tensor<1x1x64xf16>
  // CHECK: model.output %[[KV1]] "kv.out" as kv_cache : tensor<2x1x9x32xf16>
  model.output %kv1 "kv.out" as kv_cache : tensor<2x1x9x32xf16>
  return
}

// The generic form, with closed choices as their `i32` cases, is still
// accepted as input and prints in the custom form.
// CHECK-LABEL: func.func @generic_input
func.func @generic_input() {
  // CHECK: %[[X:.*]] = model.value "g.x" kv_cache : tensor<4xf16>
  %x = "model.value"() {id = "g.x", role = 5 : i32} : () -> tensor<4xf16>
  // CHECK: %[[D:.*]] = model.dropout "g.drop"(%[[X]]) p = 0.000000e+00 effects(random_state) : (tensor<4xf16>) -> tensor<4xf16>
  %d = "model.dropout"(%x) {id = "g.drop", effects = 2 : i32, p = 0.0 : f64} : (tensor<4xf16>) -> tensor<4xf16>
  // CHECK: model.output %[[D]] "g.out" as activation : tensor<4xf16>
  "model.output"(%d) {id = "g.out", role = 1 : i32} : (tensor<4xf16>) -> ()
  return
}

// The Llama family's coarse op: RMS norms (no biases), grouped-query
// attention, RoPE, a gated MLP, no dropout, SGD.
// CHECK-LABEL: func.func @llama_block
func.func @llama_block() {
  %x = model.value "l.in" activation : tensor<2x16x64xf32>
  %g1 = model.value "l.attn.norm.scale" parameter : tensor<64xf32>
  %wq = model.value "l.attn.q.weight" parameter : tensor<64x64xf32>
  %wk = model.value "l.attn.k.weight" parameter : tensor<64x16xf32>
  %wv = model.value "l.attn.v.weight" parameter : tensor<64x16xf32>
  %wo = model.value "l.attn.proj.weight" parameter : tensor<64x64xf32>
  %g2 = model.value "l.mlp.norm.scale" parameter : tensor<64xf32>
  %wu = model.value "l.mlp.up.weight" parameter : tensor<64x128xf32>
  %wd = model.value "l.mlp.down.weight" parameter : tensor<128x64xf32>
  %wg = model.value "l.mlp.gate.weight" parameter : tensor<64x128xf32>
  %opt = model.value "l.optimizer.state" optimizer_state : tensor<0xf32>
  // CHECK: model.decoder_training "l.block"(%{{.*}}) norm1(%{{[0-9]+}}) attention(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) norm2(%{{[0-9]+}}) mlp(%{{.*}}, %{{.*}}) gate(%{{.*}}) state(%{{.*}}) datatype = float32 norm = rms_norm kv_heads = 1 rope_theta = 5.000000e+05 optimizer = sgd lr = 1.000000e-02 effects(parameter_update)
  // GENERIC: "model.decoder_training"({{.*}}) {datatype = 3 : i32, effects = 1 : i32, ffn_hidden = 128 : i64, head_dim = 16 : i64, heads = 4 : i64, hidden = 64 : i64, id = "l.block", kv_heads = 1 : i64, lr = 1.000000e-02 : f64, microbatch = 2 : i64, norm = 1 : i32, operandSegmentSizes = array<i32: 1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1>, optimizer = 0 : i32, rope_theta = 5.000000e+05 : f64, seq_len = 16 : i64}
  %y = model.decoder_training "l.block"(%x) norm1(%g1) attention(%wq, %wk, %wv, %wo) norm2(%g2) mlp(%wu, %wd) gate(%wg) state(%opt)
         datatype = float32 norm = rms_norm kv_heads = 1 rope_theta = 500000.0 optimizer = sgd lr = 0.01 effects(parameter_update)
         {hidden = 64 : i64, ffn_hidden = 128 : i64, seq_len = 16 : i64, heads = 4 : i64, head_dim = 16 : i64, microbatch = 2 : i64}
       : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64x16xf32>, tensor<64x16xf32>, tensor<64x64xf32>,
          tensor<64xf32>, tensor<64x128xf32>, tensor<128x64xf32>, tensor<64x128xf32>, tensor<0xf32>) -> tensor<2x16x64xf32>
  model.output %y "l.out" : tensor<2x16x64xf32>
  return
}
