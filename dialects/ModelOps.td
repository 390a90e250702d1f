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

def Model_DecoderTrainingOp : Model_EffectOp<"decoder_training"> {
  let summary = "One decoder block trained on one microbatch (coarse)";
  let description = [{
    The coarse operation the Transformer importer emits: forward, backward
    and optimizer step of one pre-norm decoder block over one microbatch.
    Operands are the block input activation, the block's parameters (layer
    norms; query, key and value projections, whose width is `heads x
    head_dim` (which may differ from `hidden`); the output projection; the
    two MLP weights, `fc1_weight` holding gate and up projections side by
    side for a gated MLP) and the optimizer state as one flat buffer.
    Carries the model dimensions only; the parallel strategy lives outside
    ModelIR.

    ```mlir
    %y = model.decoder_training "block"(%x, %g1, %b1, %wq, %wk, %wv, %wo, %g2, %b2, %w1, %w2, %opt)
           datatype = float16 effects("parameter_update|random_state")
           {ffn_hidden = 24576 : i64, head_dim = 96 : i64, heads = 64 : i64,
            hidden = 6144 : i64, microbatch = 4 : i64, seq_len = 2048 : i64}
         : (tensor<4x2048x6144xf16>, tensor<6144xf16>, tensor<6144xf16>,
            tensor<6144x6144xf16>, tensor<6144x6144xf16>, tensor<6144x6144xf16>,
            tensor<6144x6144xf16>, tensor<6144xf16>, tensor<6144xf16>,
            tensor<6144x24576xf16>, tensor<24576x6144xf16>, tensor<1359028224xf32>)
           -> tensor<4x2048x6144xf16>
    ```
  }];
  let arguments = !con((ins AnyRankedTensor:$input), Model_BlockParams,
                       (ins AnyRankedTensor:$optimizer_state),
                       Model_CommonAttrs,
                       (ins Blueprint_PositiveCount:$hidden,
                            Blueprint_PositiveCount:$ffn_hidden,
                            Blueprint_PositiveCount:$seq_len,
                            Blueprint_PositiveCount:$heads,
                            Blueprint_PositiveCount:$head_dim,
                            Blueprint_PositiveCount:$microbatch,
                            Blueprint_Datatype:$datatype));
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = !strconcat("$id `(` $input `,` ", Model_BlockParamsFormat, " `,` $optimizer_state `)` ", "`datatype` `=` $datatype ", Model_EffectsFormat, " attr-dict `:` functional-type(operands, results)");
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
    "%s = model.batch_matmul \"attn.scores\"(%q, %k) : (tensor<256x2048x96xf16>, tensor<256x96x2048xf16>) -> tensor<256x2048x2048xf16>">;

def Model_AddOp : Model_BinaryOp<"add",
    "Element-wise (residual) addition",
    "%r = model.add \"attn.residual\"(%x, %y) : (tensor<8192x6144xf16>, tensor<8192x6144xf16>) -> tensor<8192x6144xf16>">;

def Model_SwigluOp : Model_BinaryOp<"swiglu",
    "SwiGLU gating: `silu(gate) * up`, element-wise",
    "%h = model.swiglu \"mlp.swiglu\"(%gate, %up) : (tensor<8x128xf16>, tensor<8x128xf16>) -> tensor<8x128xf16>">;

def Model_LayerNormOp : Model_PureOp<"layer_norm"> {
  let summary = "Layer normalisation over the last dimension";
  let description = [{
    ```mlir
    %n = model.layer_norm "ln1"(%x, %gamma, %beta)
         : (tensor<8192x6144xf16>, tensor<6144xf16>, tensor<6144xf16>) -> tensor<8192x6144xf16>
    ```
  }];
  let arguments = !con((ins AnyRankedTensor:$input, AnyRankedTensor:$scale,
                            AnyRankedTensor:$bias), Model_CommonAttrs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = !strconcat("$id `(` $input `,` $scale `,` $bias `)` ", Model_EffectsFormat, " attr-dict `:` functional-type(operands, results)");
}

def Model_SoftmaxOp : Model_UnaryOp<"softmax",
    "Softmax along one dimension",
    "%p = model.softmax \"attn.softmax\"(%s) dim = 2 : (tensor<256x2048x2048xf16>) -> tensor<256x2048x2048xf16>",
    (ins Blueprint_Count:$dim), "`dim` `=` $dim">;

def Model_GeluOp : Model_UnaryOp<"gelu",
    "GeLU activation",
    "%a = model.gelu \"mlp.gelu\"(%h) : (tensor<8192x24576xf16>) -> tensor<8192x24576xf16>">;

def Model_DropoutOp : Model_EffectOp<"dropout"> {
  let summary = "Dropout; consumes random state (its `effects` must say so)";
  let description = [{
    ```mlir
    %d = model.dropout "attn.dropout"(%x) effects(random_state) : (tensor<8192x6144xf16>) -> tensor<8192x6144xf16>
    ```
  }];
  let arguments = !con((ins AnyRankedTensor:$input), Model_CommonAttrs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = !strconcat("$id `(` $input `)` ", Model_EffectsFormat, " attr-dict `:` functional-type(operands, results)");
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
    The backward counterpart of the forward op named by `of`: from the
    gradients of that op's results (`output_grads`, one per result; a fork
    has several, which are summed) and the forward input it differentiates
    against (`wrt`), the gradient of that input (same type as the input).

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
    parameter: a weight, or a layer norm's scale and bias).

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
    Has the `parameter_update` effect. `state` is the optimizer state (for
    Adam, the two moments, which share one type); `new_state` has the same
    types.

    ```mlir
    %w1, %m1, %v1 = model.optimizer_step "adam.qkv"(%w, %g, %m, %v) effects(parameter_update)
        : (tensor<6144x18432xf16>, tensor<6144x18432xf16>, tensor<6144x18432xf32>, tensor<6144x18432xf32>)
          -> (tensor<6144x18432xf16>, tensor<6144x18432xf32>, tensor<6144x18432xf32>)
    ```
  }];
  let arguments = !con((ins AnyRankedTensor:$param, AnyRankedTensor:$grad,
                            Variadic<AnyRankedTensor>:$state), Model_CommonAttrs);
  let results = (outs AnyRankedTensor:$new_param, Variadic<AnyRankedTensor>:$new_state);
  let assemblyFormat = !strconcat("$id `(` $param `,` $grad (`,` $state^)? `)` ", Model_EffectsFormat, " attr-dict `:` functional-type(operands, results)");
}

#endif // BLUEPRINT_MODEL_OPS_TD
