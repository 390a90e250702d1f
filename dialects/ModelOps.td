//===- ModelOps.td - ModelIR: what the workload means ------*- tablegen -*-===//
//
// The `model` dialect states a workload's meaning: tensor values with state
// roles, typed operations over them, explicit dataflow and typed effects.
// It never names placement (TP/PP/DP, meshes, ranks), devices, kernels,
// durations, queues or addresses; the Rust verifier rejects such attributes.
//
//===----------------------------------------------------------------------===//

#ifndef BLUEPRINT_MODEL_OPS_TD
#define BLUEPRINT_MODEL_OPS_TD

include "BlueprintBase.td"

def Model_Dialect : Dialect {
  let name = "model";
  // Inherent attributes stay attributes (not properties), so the generic
  // form is `{...}`, which the IRDL form of the dialect (stock
  // `mlir-opt --irdl-file`) reads.
  let usePropertiesForAttributes = 0;
  let cppNamespace = "::blueprint::model";
  let summary = "ModelIR: target-neutral workload semantics";
  let description = [{
    ModelIR represents tensor values, typed operations, explicit dataflow,
    state roles and effects. Values are ordinary SSA tensors; `model.value`
    introduces one with a state role (parameter, activation, gradient,
    optimizer state, KV cache, input), and every other op names its operands
    and results explicitly. Effects such as a parameter update or consuming
    random state are typed (`effects(...)`), never inferred from names;
    several effects are one quoted string (`effects("parameter_update|random_state")`).

    A module holding ModelIR carries exactly one `model.header` with the
    schema name and version. Every op except the header has an `id` (the
    string right after the op name) that is unique in the module; lower
    layers refer to it as their lineage.

    Variadic operand and result groups are homogeneous (the IRDL form of
    the dialect binds one type per group), so ops with differently shaped
    state name each operand.

    ModelIR must never contain tensor/pipeline/data-parallel placement,
    logical or physical devices, kernels, durations, queues or addresses.
  }];
}

class Model_Op<string mnemonic, list<Trait> traits = []>
    : Op<Model_Dialect, mnemonic, traits>;

// Every op but the header carries a module-unique id and optional effects.
defvar Model_CommonAttrs = (ins StrAttr:$id, OptionalAttr<Blueprint_Effects>:$effects);
defvar Model_EffectsFormat = "(`effects` `(` $effects^ `)`)?";

// Math on tensors: no side effects.
class Model_PureOp<string mnemonic> : Model_Op<mnemonic, [Pure]>;
// Ops whose meaning includes an effect (random state, updates, mutation).
class Model_EffectOp<string mnemonic> : Model_Op<mnemonic, [Blueprint_TaskEffects]>;

//===----------------------------------------------------------------------===//
// Module header, values and outputs
//===----------------------------------------------------------------------===//

def Model_HeaderOp : Model_Op<"header"> {
  let summary = "Schema name and version of the ModelIR in this module";
  let description = [{
    Exactly one per module that holds `model` ops.

    ```mlir
    model.header schema "blueprint.model" version "1.0"
    ```
  }];
  let arguments = (ins StrAttr:$schema_name, StrAttr:$schema_version);
  let assemblyFormat = "`schema` $schema_name `version` $schema_version attr-dict";
}

def Model_ValueOp : Model_Op<"value", [Pure]> {
  let summary = "Introduce a tensor value with a state role";
  let description = [{
    Declares a named workload value (a parameter, the block input, optimizer
    state, a KV cache, ...) with its state role. The result type is the
    logical (unsharded) tensor type; dimensions may be dynamic (`?`) when
    they are symbolic.

    ```mlir
    %w = model.value "attn.qkv.weight" parameter : tensor<6144x18432xf16>
    ```
  }];
  let arguments = !con(Model_CommonAttrs, (ins Blueprint_Role:$role));
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = !strconcat("$id $role ", Model_EffectsFormat, " attr-dict `:` type($result)");
}

def Model_OutputOp : Model_Op<"output"> {
  let summary = "Mark a value as an output of the workload";
  let description = [{
    `as <role>` states the role of the value leaving the workload when it
    is state (the KV cache after a phase, updated parameters).

    ```mlir
    model.output %y "block.out" : tensor<4x2048x6144xf16>
    model.output %kv "kv.out" as kv_cache : tensor<2x1x?x4096xf16>
    ```
  }];
  let arguments = !con((ins AnyRankedTensor:$value), Model_CommonAttrs,
                       (ins OptionalAttr<Blueprint_Role>:$role));
  let assemblyFormat = !strconcat("$value $id (`as` $role^)? ", Model_EffectsFormat, " attr-dict `:` type($value)");
}

//===----------------------------------------------------------------------===//
// Coarse Transformer operations
//===----------------------------------------------------------------------===//

// The parameters of one pre-norm decoder block, as named operands (every
// parameter has its own shape).
defvar Model_BlockParams = (ins AnyRankedTensor:$ln1_scale, AnyRankedTensor:$ln1_bias,
                                AnyRankedTensor:$q_weight, AnyRankedTensor:$k_weight,
                                AnyRankedTensor:$v_weight, AnyRankedTensor:$proj_weight,
                                AnyRankedTensor:$ln2_scale, AnyRankedTensor:$ln2_bias,
                                AnyRankedTensor:$fc1_weight, AnyRankedTensor:$fc2_weight);
defvar Model_BlockParamsFormat = !strconcat("$ln1_scale `,` $ln1_bias `,` $q_weight `,` $k_weight `,` ", "$v_weight `,` $proj_weight `,` $ln2_scale `,` $ln2_bias `,` $fc1_weight `,` $fc2_weight");

def Model_DecoderTrainingOp : Model_Op<"decoder_training",
    [AttrSizedOperandSegments, Blueprint_TaskEffects]> {
  let summary = "One decoder block trained on one microbatch (coarse)";
  let description = [{
    The coarse operation the Transformer importer emits: forward, backward
    and optimizer step of one pre-norm decoder block over one microbatch.
    Operands, grouped by keyword: the block input activation; the two norms'
    parameters (`norm1`, `norm2`: a scale, and a bias for a layer norm);
    the attention's query, key, value and output projections (`attention`:
    queries are `heads x head_dim` wide, keys and values `kv_heads x
    head_dim`, which may differ from `hidden`); the MLP's input and output
    projections (`mlp`: `fc1`/`fc2`, or `up`/`down` of a gated MLP, whose
    `gate` projection follows); and the optimizer state as one flat buffer
    (what the step keeps, counted: fp32 master weights below fp32 and the
    two Adam moments). Carries the model dimensions only; the parallel
    strategy lives outside ModelIR.

    What the block computes is `EXECUTION.md`'s: `norm` (default
    `layer_norm`) picks LayerNorm or RMSNorm, `kv_heads` (default `heads`)
    grouped-query attention, `rope_theta` rotary embeddings of queries and
    keys (absent: none), `dropout` the dropout probability (absent: no
    dropout ops), and `optimizer` with `lr`, `beta1`, `beta2`, `eps` the
    update rule (absent: Adam with lr 1e-3, betas 0.9 and 0.999, eps 1e-8).
    `model-decompose-transformer` expands it into primitive ops with
    exactly this meaning.

    ```mlir
    %y = model.decoder_training "block"(%x) norm1(%g1, %b1) attention(%wq, %wk, %wv, %wo)
           norm2(%g2, %b2) mlp(%w1, %w2) state(%opt)
           datatype = float16 dropout = 0.000000e+00 effects("parameter_update|random_state")
           {ffn_hidden = 24576 : i64, head_dim = 96 : i64, heads = 64 : i64,
            hidden = 6144 : i64, microbatch = 4 : i64, seq_len = 2048 : i64}
         : (tensor<4x2048x6144xf16>, tensor<6144xf16>, tensor<6144xf16>,
            tensor<6144x6144xf16>, tensor<6144x6144xf16>, tensor<6144x6144xf16>,
            tensor<6144x6144xf16>, tensor<6144xf16>, tensor<6144xf16>,
            tensor<6144x24576xf16>, tensor<24576x6144xf16>, tensor<1359028224xf32>)
           -> tensor<4x2048x6144xf16>
    ```
  }];
  let arguments = !con((ins AnyRankedTensor:$input,
                            AnyRankedTensor:$ln1_scale, Optional<AnyRankedTensor>:$ln1_bias,
                            AnyRankedTensor:$q_weight, AnyRankedTensor:$k_weight,
                            AnyRankedTensor:$v_weight, AnyRankedTensor:$proj_weight,
                            AnyRankedTensor:$ln2_scale, Optional<AnyRankedTensor>:$ln2_bias,
                            AnyRankedTensor:$fc1_weight, AnyRankedTensor:$fc2_weight,
                            Optional<AnyRankedTensor>:$gate_weight,
                            AnyRankedTensor:$optimizer_state),
                       Model_CommonAttrs,
                       (ins Blueprint_PositiveCount:$hidden,
                            Blueprint_PositiveCount:$ffn_hidden,
                            Blueprint_PositiveCount:$seq_len,
                            Blueprint_PositiveCount:$heads,
                            Blueprint_PositiveCount:$head_dim,
                            Blueprint_PositiveCount:$microbatch,
                            Blueprint_Datatype:$datatype,
                            OptionalAttr<Blueprint_PositiveCount>:$kv_heads,
                            OptionalAttr<Blueprint_Norm>:$norm,
                            OptionalAttr<F64Attr>:$rope_theta,
                            OptionalAttr<F64Attr>:$dropout,
                            OptionalAttr<Blueprint_OptimizerKind>:$optimizer,
                            OptionalAttr<F64Attr>:$lr,
                            OptionalAttr<F64Attr>:$beta1,
                            OptionalAttr<F64Attr>:$beta2,
                            OptionalAttr<F64Attr>:$eps));
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = !strconcat("$id `(` $input `)` ",
      "`norm1` `(` $ln1_scale (`,` $ln1_bias^)? `)` ",
      "`attention` `(` $q_weight `,` $k_weight `,` $v_weight `,` $proj_weight `)` ",
      "`norm2` `(` $ln2_scale (`,` $ln2_bias^)? `)` ",
      "`mlp` `(` $fc1_weight `,` $fc2_weight `)` (`gate` `(` $gate_weight^ `)`)? ",
      "`state` `(` $optimizer_state `)` ",
      "`datatype` `=` $datatype (`norm` `=` $norm^)? (`kv_heads` `=` $kv_heads^)? (`rope_theta` `=` $rope_theta^)? ",
      "(`dropout` `=` $dropout^)? (`optimizer` `=` $optimizer^)? (`lr` `=` $lr^)? (`beta1` `=` $beta1^)? ",
      "(`beta2` `=` $beta2^)? (`eps` `=` $eps^)? ", Model_EffectsFormat, " attr-dict `:` functional-type(operands, results)");
}

def Model_DecoderInferenceOp : Model_EffectOp<"decoder_inference"> {
  let summary = "One decoder block run for one inference phase (coarse)";
  let description = [{
    A prefill over `query_tokens` prompt tokens, or one decode step whose
    query attends over `context_tokens` tokens. The KV cache is explicit
    state: a decode step takes the cache (the last operand; K and V stacked
    on the leading dimension) and both phases return the cache after the
    phase (the prefill writes it; a decode step reads it and appends one
    token).

    ```mlir
    %y, %kv1 = model.decoder_inference "decode" decode(%x, %g1, %b1, %wq, %wk, %wv, %wo, %g2, %b2, %w1, %w2, %kv0)
                 datatype = float16 kv_datatype = float16 effects(mutation)
                 {batch = 1 : i64, context_tokens = 576 : i64, ffn_hidden = 11008 : i64,
                  head_dim = 128 : i64, heads = 32 : i64, hidden = 4096 : i64,
                  kv_heads = 32 : i64, query_tokens = 1 : i64}
         : (tensor<1x1x4096xf16>, tensor<4096xf16>, tensor<4096xf16>,
            tensor<4096x4096xf16>, tensor<4096x4096xf16>, tensor<4096x4096xf16>,
            tensor<4096x4096xf16>, tensor<4096xf16>, tensor<4096xf16>,
            tensor<4096x22016xf16>, tensor<11008x4096xf16>, tensor<2x1x575x4096xf16>)
           -> (tensor<1x1x4096xf16>, tensor<2x1x576x4096xf16>)
    ```
  }];
  let arguments = !con((ins AnyRankedTensor:$input), Model_BlockParams,
                       (ins Optional<AnyRankedTensor>:$kv_cache),
                       Model_CommonAttrs,
                       (ins Blueprint_InferencePhase:$phase,
                            Blueprint_PositiveCount:$hidden,
                            Blueprint_PositiveCount:$ffn_hidden,
                            Blueprint_PositiveCount:$heads,
                            Blueprint_PositiveCount:$kv_heads,
                            Blueprint_PositiveCount:$head_dim,
                            Blueprint_PositiveCount:$batch,
                            Blueprint_PositiveCount:$query_tokens,
                            Blueprint_PositiveCount:$context_tokens,
                            Blueprint_Datatype:$datatype,
                            Blueprint_Datatype:$kv_datatype));
  let results = (outs AnyRankedTensor:$output, AnyRankedTensor:$new_kv_cache);
  let assemblyFormat = !strconcat("$id $phase `(` $input `,` ", Model_BlockParamsFormat, " (`,` $kv_cache^)? `)` ", "`datatype` `=` $datatype `kv_datatype` `=` $kv_datatype ", Model_EffectsFormat, " attr-dict `:` functional-type(operands, results)");
}

//===----------------------------------------------------------------------===//
// Primitive operations
//===----------------------------------------------------------------------===//

class Model_BinaryOp<string mnemonic, string summary_, string example>
    : Model_PureOp<mnemonic> {
  let summary = summary_;
  let description = !strconcat("```mlir\n", example, "\n```");
  let arguments = !con((ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs), Model_CommonAttrs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = !strconcat("$id `(` $lhs `,` $rhs `)` ", Model_EffectsFormat, " attr-dict `:` functional-type(operands, results)");
}

class Model_UnaryOp<string mnemonic, string summary_, string example, dag extra = (ins),
                    string extraFormat = "">
    : Model_PureOp<mnemonic> {
  let summary = summary_;
  let description = !strconcat("```mlir\n", example, "\n```");
  let arguments = !con((ins AnyRankedTensor:$input), Model_CommonAttrs, extra);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = !strconcat("$id `(` $input `)` ", extraFormat, " ", Model_EffectsFormat, " attr-dict `:` functional-type(operands, results)");
}

def Model_MatmulOp : Model_BinaryOp<"matmul",
    "Linear layer / matrix multiplication `Y[M,K] = X[M,N] x W[N,K]`",
    "%y = model.matmul \"mlp.fc1\"(%x, %w) : (tensor<8192x6144xf16>, tensor<6144x24576xf16>) -> tensor<8192x24576xf16>">;

def Model_BatchMatmulOp : Model_BinaryOp<"batch_matmul",
    "Batched matrix multiplication over the leading dimensions",
    "%s = model.batch_matmul \"attn.scores\"(%q, %k) : (tensor<256x2048x96xf16>, tensor<256x96x2048xf16>) -> tensor<256x2048x2048xf16>"> {
  let description = [{
    ```mlir
    %s = model.batch_matmul "attn.scores"(%q, %k) : (tensor<256x2048x96xf16>, tensor<256x96x2048xf16>) -> tensor<256x2048x2048xf16>
    ```

    In a served block (`model-decompose-transformer` of a
    `model.decoder_inference`) it is the attention over the KV cache: its
    second operand is a `model.kv_append` result `[2, b, t, kv_heads x
    head_dim]` (keys, then values), and it reads `[b, s, heads x head_dim]`
    queries into `[b, heads, s, t]` scores, or those probabilities into the
    `[b, s, heads x head_dim]` context (each query head reading the KV head
    of its group). That form is counted and distributed
    (`distribute-transformer-inference`); `convert-model-to-linalg` does not
    lower it yet (it states no scale or mask).
  }];
}

def Model_AddOp : Model_BinaryOp<"add",
    "Element-wise (residual) addition",
    "%r = model.add \"attn.residual\"(%x, %y) : (tensor<8192x6144xf16>, tensor<8192x6144xf16>) -> tensor<8192x6144xf16>">;

def Model_SwigluOp : Model_BinaryOp<"swiglu",
    "SwiGLU gating: `silu(gate) * up`, element-wise",
    "%h = model.swiglu \"mlp.swiglu\"(%gate, %up) : (tensor<8x128xf16>, tensor<8x128xf16>) -> tensor<8x128xf16>">;

def Model_LayerNormOp : Model_PureOp<"layer_norm"> {
  let summary = "Layer normalisation over the last dimension";
  let description = [{
    `y = (x - mean(x)) / sqrt(var(x) + eps) * scale + bias` over the last
    dimension (biased variance; `eps` defaults to 1e-5), as EXECUTION.md's
    `LayerNorm`.

    ```mlir
    %n = model.layer_norm "ln1"(%x, %gamma, %beta) eps = 1.000000e-05
         : (tensor<8192x6144xf16>, tensor<6144xf16>, tensor<6144xf16>) -> tensor<8192x6144xf16>
    ```
  }];
  let arguments = !con((ins AnyRankedTensor:$input, AnyRankedTensor:$scale,
                            AnyRankedTensor:$bias), Model_CommonAttrs,
                       (ins OptionalAttr<F64Attr>:$eps));
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = !strconcat("$id `(` $input `,` $scale `,` $bias `)` (`eps` `=` $eps^)? ", Model_EffectsFormat, " attr-dict `:` functional-type(operands, results)");
}

def Model_RmsNormOp : Model_PureOp<"rms_norm"> {
  let summary = "RMS normalisation over the last dimension";
  let description = [{
    `y = x / sqrt(mean(x^2) + eps) * scale` over the last dimension
    (`eps` defaults to 1e-5), as EXECUTION.md's `RMSNorm`.

    ```mlir
    %n = model.rms_norm "attn.norm"(%x, %gamma) eps = 1.000000e-05
         : (tensor<4x2048x4096xf32>, tensor<4096xf32>) -> tensor<4x2048x4096xf32>
    ```
  }];
  let arguments = !con((ins AnyRankedTensor:$input, AnyRankedTensor:$scale), Model_CommonAttrs,
                       (ins OptionalAttr<F64Attr>:$eps));
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = !strconcat("$id `(` $input `,` $scale `)` (`eps` `=` $eps^)? ", Model_EffectsFormat, " attr-dict `:` functional-type(operands, results)");
}

def Model_AttentionScoresOp : Model_PureOp<"attention_scores"> {
  let summary = "Scaled attention scores per head, with an optional causal mask";
  let description = [{
    From queries `[b, s, heads x head_dim]` and keys `[b, s, kv_heads x
    head_dim]` (head `i` is columns `[i*head_dim, (i+1)*head_dim)`), the
    scores `[b, heads, s, s]`: `S[b, i, t, u] = scale * q_i[t] . k_j[u]`
    where query head `i` reads key head `j = i / (heads / kv_heads)`
    (grouped-query attention; `kv_heads = heads` is multi-head,
    `kv_heads = 1` multi-query). With `causal`, scores of keys after the
    query (`u > t`) are `-inf`.

    ```mlir
    %s = model.attention_scores "attn.scores"(%q, %k) heads = 4 kv_heads = 2 head_dim = 16 scale = 2.500000e-01 causal
         : (tensor<2x16x64xf32>, tensor<2x16x32xf32>) -> tensor<2x4x16x16xf32>
    ```
  }];
  let arguments = !con((ins AnyRankedTensor:$query, AnyRankedTensor:$key), Model_CommonAttrs,
                       (ins Blueprint_PositiveCount:$heads, Blueprint_PositiveCount:$kv_heads,
                            Blueprint_PositiveCount:$head_dim, F64Attr:$scale, UnitAttr:$causal));
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = !strconcat("$id `(` $query `,` $key `)` `heads` `=` $heads `kv_heads` `=` $kv_heads `head_dim` `=` $head_dim `scale` `=` $scale (`causal` $causal^)? ", Model_EffectsFormat, " attr-dict `:` functional-type(operands, results)");
}

def Model_AttentionContextOp : Model_PureOp<"attention_context"> {
  let summary = "Attention-weighted values per head, heads concatenated";
  let description = [{
    From probabilities `[b, heads, s, s]` and values `[b, s, kv_heads x
    head_dim]`, the context `[b, s, heads x head_dim]`: head `i` of the
    result is `P_i . v_j` with `j = i / (heads / kv_heads)`.

    ```mlir
    %c = model.attention_context "attn.context"(%p, %v) heads = 4 kv_heads = 2 head_dim = 16
         : (tensor<2x4x16x16xf32>, tensor<2x16x32xf32>) -> tensor<2x16x64xf32>
    ```
  }];
  let arguments = !con((ins AnyRankedTensor:$probs, AnyRankedTensor:$value), Model_CommonAttrs,
                       (ins Blueprint_PositiveCount:$heads, Blueprint_PositiveCount:$kv_heads,
                            Blueprint_PositiveCount:$head_dim));
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = !strconcat("$id `(` $probs `,` $value `)` `heads` `=` $heads `kv_heads` `=` $kv_heads `head_dim` `=` $head_dim ", Model_EffectsFormat, " attr-dict `:` functional-type(operands, results)");
}

def Model_RopeOp : Model_PureOp<"rope"> {
  let summary = "Rotary position embedding of each head (rotate-half)";
  let description = [{
    On `[b, s, heads x head_dim]`, rotates each head's pairs `(j, j +
    head_dim/2)` by the angle `t * theta^(-2j/head_dim)`, `t` the position
    along dimension 1 (0-based): Hugging Face Llama's rotate-half
    convention, as EXECUTION.md states it. `head_dim` is even.

    ```mlir
    %r = model.rope "attn.q.rope"(%q) heads = 4 head_dim = 16 theta = 1.000000e+04
         : (tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
    ```
  }];
  let arguments = !con((ins AnyRankedTensor:$input), Model_CommonAttrs,
                       (ins Blueprint_PositiveCount:$heads, Blueprint_PositiveCount:$head_dim, F64Attr:$theta));
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = !strconcat("$id `(` $input `)` `heads` `=` $heads `head_dim` `=` $head_dim `theta` `=` $theta ", Model_EffectsFormat, " attr-dict `:` functional-type(operands, results)");
}

def Model_SoftmaxOp : Model_UnaryOp<"softmax",
    "Softmax along one dimension",
    "%p = model.softmax \"attn.softmax\"(%s) dim = 2 : (tensor<256x2048x2048xf16>) -> tensor<256x2048x2048xf16>",
    (ins Blueprint_Count:$dim), "`dim` `=` $dim">;

def Model_GeluOp : Model_UnaryOp<"gelu",
    "GeLU activation (tanh approximation: `0.5 u (1 + tanh(sqrt(2/pi) (u + 0.044715 u^3)))`)",
    "%a = model.gelu \"mlp.gelu\"(%h) : (tensor<8192x24576xf16>) -> tensor<8192x24576xf16>">;

def Model_ReluOp : Model_UnaryOp<"relu",
    "ReLU activation: `max(u, 0)`",
    "%a = model.relu \"mlp.act\"(%h) : (tensor<8192x24576xf16>) -> tensor<8192x24576xf16>">;

def Model_SiluOp : Model_UnaryOp<"silu",
    "SiLU activation: `u / (1 + e^(-u))`",
    "%a = model.silu \"mlp.act\"(%h) : (tensor<8192x24576xf16>) -> tensor<8192x24576xf16>">;

def Model_BiasAddOp : Model_PureOp<"bias_add"> {
  let summary = "Add a bias vector to every row: `y[..., j] = x[..., j] + bias[j]`";
  let description = [{
    The bias is a parameter as wide as the input's last dimension; its
    gradient (`model.weight_gradient`) sums the output gradient over the
    rows, and the input's gradient is the output's.

    ```mlir
    %y = model.bias_add "mlp.fc1.bias_add"(%x, %b) : (tensor<2x16x256xf32>, tensor<256xf32>) -> tensor<2x16x256xf32>
    ```
  }];
  let arguments = !con((ins AnyRankedTensor:$input, AnyRankedTensor:$bias), Model_CommonAttrs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = !strconcat("$id `(` $input `,` $bias `)` ", Model_EffectsFormat, " attr-dict `:` functional-type(operands, results)");
}

def Model_DropoutOp : Model_EffectOp<"dropout"> {
  let summary = "Dropout with probability `p`; consumes random state (its `effects` must say so)";
  let description = [{
    Zeroes each element with probability `p` and scales the rest by
    `1 / (1 - p)`; `p = 0` is the identity, whose work is still counted.
    Executing `p > 0` needs a mask every rank can regenerate (not yet
    provided: the lowering refuses it).

    ```mlir
    %d = model.dropout "attn.dropout"(%x) p = 1.000000e-01 effects(random_state) : (tensor<8192x6144xf16>) -> tensor<8192x6144xf16>
    ```
  }];
  let arguments = !con((ins AnyRankedTensor:$input), Model_CommonAttrs, (ins F64Attr:$p));
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = !strconcat("$id `(` $input `)` `p` `=` $p ", Model_EffectsFormat, " attr-dict `:` functional-type(operands, results)");
}

def Model_SplitOp : Model_PureOp<"split"> {
  let summary = "Split a tensor into equal parts along one dimension";
  let description = [{
    Every result has the input's shape with dimension `dim` divided by the
    number of results (for example the fused gate and up projections of a
    gated MLP).

    ```mlir
    %gate, %up = model.split "mlp.fc1.split"(%w) dim = 1
        : (tensor<64x256xf16>) -> (tensor<64x128xf16>, tensor<64x128xf16>)
    ```
  }];
  let arguments = !con((ins AnyRankedTensor:$input), Model_CommonAttrs,
                       (ins Blueprint_Count:$dim));
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = !strconcat("$id `(` $input `)` `dim` `=` $dim ", Model_EffectsFormat, " attr-dict `:` functional-type(operands, results)");
}

def Model_KvAppendOp : Model_EffectOp<"kv_append"> {
  let summary = "Append new keys and values to a KV cache";
  let description = [{
    The cache after a pass: `cache` (absent for the prefill, which starts a
    fresh cache) with this pass's `keys` and `values` appended along the
    token dimension. Implementations update the cache in place, so the op
    declares the `mutation` effect.

    The cache follows the keyword `cache`, with its type: an optional group
    anchored on an operand would read the keys of a fresh append as a cache.

    ```mlir
    %kv0 = model.kv_append "prefill.attn.kv_append"(%k0, %v0) effects(mutation)
        : (tensor<1x8x128xf16>, tensor<1x8x128xf16>) -> tensor<2x1x?x128xf16>
    %kv1 = model.kv_append "decode.attn.kv_append"(%k, %v) cache(%kv0 : tensor<2x1x?x128xf16>) effects(mutation)
        : (tensor<1x1x128xf16>, tensor<1x1x128xf16>) -> tensor<2x1x?x128xf16>
    ```
  }];
  let arguments = !con((ins Optional<AnyRankedTensor>:$cache, AnyRankedTensor:$keys,
                            AnyRankedTensor:$values), Model_CommonAttrs);
  let results = (outs AnyRankedTensor:$new_cache);
  let assemblyFormat = !strconcat("$id `(` $keys `,` $values `)` (`cache` `(` $cache^ `:` type($cache) `)`)? ", Model_EffectsFormat, " attr-dict `:` `(` type($keys) `,` type($values) `)` `->` type($new_cache)");
}

def Model_ForkOp : Model_PureOp<"fork"> {
  let summary = "Use one value in several places (explicit fan-out)";
  let description = [{
    Makes fan-out explicit so each consumer has its own edge; every result
    has the input's type.

    ```mlir
    %a, %b = model.fork "ln1.fork"(%x) : (tensor<8192x6144xf16>) -> (tensor<8192x6144xf16>, tensor<8192x6144xf16>)
    ```
  }];
  let arguments = !con((ins AnyRankedTensor:$input), Model_CommonAttrs);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = !strconcat("$id `(` $input `)` ", Model_EffectsFormat, " attr-dict `:` functional-type(operands, results)");
}

def Model_ActivationGradientOp : Model_PureOp<"activation_gradient"> {
  let summary = "Gradient of a forward op's output with respect to one of its inputs";
  let description = [{
    The backward counterpart of the forward op named by `of` (an op of the
    same function, before this one): from the gradients of that op's
    results (`output_grads`, one per result; a fork has several, which are
    summed) and the forward input it differentiates against (`wrt`, one of
    the forward op's operands), the gradient of that input (same type as
    the input). What else the derivative reads (a matmul's weight, a
    softmax's output, a norm's scale) is the forward op's own operands and
    results: `convert-model-to-linalg` writes out each op kind's
    derivative (EXECUTION.md's math) from them.

    ```mlir
    %dx = model.activation_gradient "mlp.fc1.agrad" of "mlp.fc1"(%dy) wrt %x
          : (tensor<8x256xf16>, tensor<8x64xf16>) -> tensor<8x64xf16>
    ```
  }];
  let arguments = !con((ins Variadic<AnyRankedTensor>:$output_grads, AnyRankedTensor:$input),
                       Model_CommonAttrs, (ins StrAttr:$of));
  let results = (outs AnyRankedTensor:$input_grad);
  let assemblyFormat = !strconcat("$id `of` $of `(` $output_grads `)` `wrt` $input ", Model_EffectsFormat, " attr-dict `:` functional-type(operands, results)");
}

def Model_WeightGradientOp : Model_PureOp<"weight_gradient"> {
  let summary = "Gradient of a forward op's output with respect to its parameters";
  let description = [{
    From the gradient of the forward op `of`'s result and the forward
    input (`wrt`), the gradients of the op's parameters (one result per
    parameter: a matmul's weight `X^T dY` over the flattened rows, a layer
    norm's scale and bias, an RMS norm's scale).

    ```mlir
    %dw = model.weight_gradient "mlp.fc1.wgrad" of "mlp.fc1"(%dy) wrt %x
          : (tensor<8x256xf16>, tensor<8x64xf16>) -> tensor<64x256xf16>
    ```
  }];
  let arguments = !con((ins AnyRankedTensor:$output_grad, AnyRankedTensor:$input),
                       Model_CommonAttrs, (ins StrAttr:$of));
  let results = (outs Variadic<AnyRankedTensor>:$weight_grads);
  let assemblyFormat = !strconcat("$id `of` $of `(` $output_grad `)` `wrt` $input ", Model_EffectsFormat, " attr-dict `:` functional-type(operands, results)");
}

def Model_OptimizerStepOp : Model_EffectOp<"optimizer_step"> {
  let summary = "Update a parameter and its optimizer state from a gradient";
  let description = [{
    Has the `parameter_update` effect. `kind` is the rule (EXECUTION.md):
    `sgd` (`w - lr g`) keeps no state; `adam` keeps the two moments `m`
    and `v` (as `torch.optim.Adam` without weight decay, at step `step`,
    default 1, with `beta1`, `beta2` and `eps`). A parameter below fp32
    also keeps its fp32 master copy, first. `state` holds them, each an
    fp32 tensor of the parameter's shape; `new_state` has the same types.

    ```mlir
    %w1, %m1, %v1 = model.optimizer_step "attn.q.optim"(%w, %g, %m, %v) adam lr = 1.000000e-03
        beta1 = 9.000000e-01 beta2 = 9.990000e-01 eps = 1.000000e-08 effects(parameter_update)
        : (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>)
          -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>)
    ```
  }];
  let arguments = !con((ins AnyRankedTensor:$param, AnyRankedTensor:$grad,
                            Variadic<AnyRankedTensor>:$state), Model_CommonAttrs,
                       (ins Blueprint_OptimizerKind:$kind, F64Attr:$lr, OptionalAttr<F64Attr>:$beta1,
                            OptionalAttr<F64Attr>:$beta2, OptionalAttr<F64Attr>:$eps,
                            OptionalAttr<Blueprint_PositiveCount>:$step));
  let results = (outs AnyRankedTensor:$new_param, Variadic<AnyRankedTensor>:$new_state);
  let assemblyFormat = !strconcat("$id `(` $param `,` $grad (`,` $state^)? `)` $kind `lr` `=` $lr ",
      "(`beta1` `=` $beta1^)? (`beta2` `=` $beta2^)? (`eps` `=` $eps^)? (`step` `=` $step^)? ",
      Model_EffectsFormat, " attr-dict `:` functional-type(operands, results)");
}

#endif // BLUEPRINT_MODEL_OPS_TD
