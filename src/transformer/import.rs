//! Import of a Transformer spec into ModelIR: one function holding the
//! block's typed values (input activation, parameters, optimizer state) and
//! the coarse decoder op, plus the strategy binding as a module attribute.

use std::fmt::Write as _;

use super::binding::{spec_attribute_text, INFERENCE_SPEC, TRAINING_SPEC};
use crate::workload::{Datatype, InferenceSpec, TrainingSpec};

/// The MLIR element type of a datatype.
#[must_use]
pub fn element_type(datatype: Datatype) -> &'static str {
    match datatype {
        Datatype::Float8 => "f8E4M3FN",
        Datatype::Float16 => "f16",
        Datatype::Bfloat16 => "bf16",
        Datatype::Float32 => "f32",
    }
}

/// One named parameter of the block: (id, shape). The order is that of the
/// coarse op's operands.
#[must_use]
pub fn block_parameters(hidden: u64, attention_width: u64, kv_width: u64, ffn_in: u64, ffn_hidden: u64) -> [(&'static str, Vec<u64>); 10] {
    [
        ("attn.ln.scale", vec![hidden]),
        ("attn.ln.bias", vec![hidden]),
        ("attn.q.weight", vec![hidden, attention_width]),
        ("attn.k.weight", vec![hidden, kv_width]),
        ("attn.v.weight", vec![hidden, kv_width]),
        ("attn.proj.weight", vec![attention_width, hidden]),
        ("mlp.ln.scale", vec![hidden]),
        ("mlp.ln.bias", vec![hidden]),
        ("mlp.fc1.weight", vec![hidden, ffn_in]),
        ("mlp.fc2.weight", vec![ffn_hidden, hidden]),
    ]
}

pub(crate) fn tensor(shape: &[u64], element: &str) -> String {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    format!("tensor<{}x{element}>", dims.join("x"))
}

/// ModelIR text for one decoder block trained under `spec` (validated by
/// the caller). The strategy is a module attribute, not part of ModelIR.
#[must_use]
pub fn import_training(spec: &TrainingSpec) -> String {
    let m = &spec.model;
    let w = &spec.workload;
    let dt = element_type(w.datatype);
    let width = m.heads * m.head_dim;
    let params = block_parameters(m.hidden, width, width, m.ffn_hidden, m.ffn_hidden);
    let param_elements: u64 = params.iter().map(|(_, s)| s.iter().product::<u64>()).sum();
    // fp32 master weights (below fp32) and the two Adam moments.
    let optimizer_copies = if w.datatype == Datatype::Float32 { 2 } else { 3 };
    let activation = tensor(&[w.microbatch, m.seq_len, m.hidden], dt);

    let mut text = String::new();
    let _ = writeln!(text, "module attributes {{{TRAINING_SPEC} = {}}} {{", spec_attribute_text(spec));
    let _ = writeln!(text, "  \"model.header\"() {{schema_name = \"blueprint.model\", schema_version = \"1.0\"}} : () -> ()");
    let _ = writeln!(text, "  func.func @decoder_block() {{");
    let _ = writeln!(text, "    %x = \"model.value\"() {{id = \"block.in\", role = \"activation\"}} : () -> {activation}");
    let mut operands = vec!["%x".to_string()];
    let mut types = vec![activation.clone()];
    for (i, (id, shape)) in params.iter().enumerate() {
        let ty = tensor(shape, dt);
        let _ = writeln!(text, "    %p{i} = \"model.value\"() {{id = \"{id}\", role = \"parameter\"}} : () -> {ty}");
        operands.push(format!("%p{i}"));
        types.push(ty);
    }
    let state = tensor(&[param_elements * optimizer_copies], "f32");
    let _ = writeln!(text, "    %opt = \"model.value\"() {{id = \"optimizer.state\", role = \"optimizer_state\"}} : () -> {state}");
    operands.push("%opt".into());
    types.push(state);
    let _ = writeln!(
        text,
        "    %y = \"model.decoder_training\"({}) {{id = \"block\", hidden = {} : i64, ffn_hidden = {} : i64, seq_len = {} : i64, heads = {} : i64, head_dim = {} : i64, microbatch = {} : i64, datatype = \"{}\", effects = [\"parameter_update\", \"random_state\"]}} : ({}) -> {activation}",
        operands.join(", "),
        m.hidden, m.ffn_hidden, m.seq_len, m.heads, m.head_dim, w.microbatch,
        datatype_name(w.datatype),
        types.join(", "),
    );
    let _ = writeln!(text, "    \"model.output\"(%y) {{id = \"block.out\"}} : ({activation}) -> ()");
    let _ = writeln!(text, "    return\n  }}\n}}");
    text
}

/// The spec's spelling of a datatype (also the `datatype` attribute).
#[must_use]
pub fn datatype_name(datatype: Datatype) -> &'static str {
    match datatype {
        Datatype::Float8 => "float8",
        Datatype::Float16 => "float16",
        Datatype::Bfloat16 => "bfloat16",
        Datatype::Float32 => "float32",
    }
}

/// The shape of one block's KV cache (K and V stacked) for `tokens` tokens;
/// the token dimension is symbolic (`?`) when `tokens` is `None`.
#[must_use]
pub fn kv_cache_type(spec: &InferenceSpec, tokens: Option<u64>) -> String {
    let kv_width = spec.model.kv_heads() * spec.model.head_dim;
    let tokens = tokens.map_or("?".to_string(), |t| t.to_string());
    format!(
        "tensor<2x{}x{tokens}x{kv_width}x{}>",
        spec.workload.batch,
        element_type(spec.workload.kv_datatype())
    )
}

/// ModelIR text for one decoder block served under `spec` (validated by the
/// caller): the prefill over the prompt, which writes the KV cache, and a
/// decode step at the final context, which reads the whole cache and
/// appends one token. The cache's token dimension is symbolic, so the
/// dataflow prefill -> decode is explicit at every context length.
#[must_use]
pub fn import_inference(spec: &InferenceSpec) -> String {
    let m = &spec.model;
    let w = &spec.workload;
    let dt = element_type(w.datatype);
    let width = m.heads * m.head_dim;
    let kv_width = m.kv_heads() * m.head_dim;
    let ffn_in = if m.gated_mlp { 2 * m.ffn_hidden } else { m.ffn_hidden };
    let params = block_parameters(m.hidden, width, kv_width, ffn_in, m.ffn_hidden);
    let prompt = tensor(&[w.batch, w.prompt_tokens, m.hidden], dt);
    let token = tensor(&[w.batch, 1, m.hidden], dt);
    let cache = kv_cache_type(spec, None);
    let dims = |phase: &str, query: u64, context: u64| {
        format!(
            "phase = \"{phase}\", hidden = {} : i64, ffn_hidden = {} : i64, heads = {} : i64, kv_heads = {} : i64, head_dim = {} : i64, batch = {} : i64, query_tokens = {query} : i64, context_tokens = {context} : i64, datatype = \"{}\", kv_datatype = \"{}\", effects = [\"mutation\"]",
            m.hidden, m.ffn_hidden, m.heads, m.kv_heads(), m.head_dim, w.batch,
            datatype_name(w.datatype), datatype_name(w.kv_datatype())
        )
    };

    let mut text = String::new();
    let _ = writeln!(text, "module attributes {{{INFERENCE_SPEC} = {}}} {{", spec_attribute_text(spec));
    let _ = writeln!(text, "  \"model.header\"() {{schema_name = \"blueprint.model\", schema_version = \"1.0\"}} : () -> ()");
    let _ = writeln!(text, "  func.func @decoder_block_inference() {{");
    let _ = writeln!(text, "    %prompt = \"model.value\"() {{id = \"prompt.in\", role = \"input\"}} : () -> {prompt}");
    let mut params_ssa = Vec::new();
    let mut param_types = Vec::new();
    for (i, (id, shape)) in params.iter().enumerate() {
        let ty = tensor(shape, dt);
        let _ = writeln!(text, "    %p{i} = \"model.value\"() {{id = \"{id}\", role = \"parameter\"}} : () -> {ty}");
        params_ssa.push(format!("%p{i}"));
        param_types.push(ty);
    }
    let _ = writeln!(
        text,
        "    %out, %kv = \"model.decoder_inference\"(%prompt, {}) {{id = \"prefill\", {}}} : ({prompt}, {}) -> ({prompt}, {cache})",
        params_ssa.join(", "),
        dims("prefill", w.prompt_tokens, w.prompt_tokens),
        param_types.join(", ")
    );
    let _ = writeln!(text, "    \"model.output\"(%out) {{id = \"prompt.out\"}} : ({prompt}) -> ()");
    if w.generated_tokens > 0 {
        let context = w.final_context();
        let _ = writeln!(text, "    %token = \"model.value\"() {{id = \"token.in\", role = \"input\"}} : () -> {token}");
        let _ = writeln!(
            text,
            "    %next, %kv_next = \"model.decoder_inference\"(%token, {}, %kv) {{id = \"decode\", {}}} : ({token}, {}, {cache}) -> ({token}, {cache})",
            params_ssa.join(", "),
            dims("decode", 1, context),
            param_types.join(", ")
        );
        let _ = writeln!(text, "    \"model.output\"(%next) {{id = \"token.out\"}} : ({token}) -> ()");
        let _ = writeln!(text, "    \"model.output\"(%kv_next) {{id = \"kv.out\", role = \"kv_cache\"}} : ({cache}) -> ()");
    } else {
        let _ = writeln!(text, "    \"model.output\"(%kv) {{id = \"kv.out\", role = \"kv_cache\"}} : ({cache}) -> ()");
    }
    let _ = writeln!(text, "    return\n  }}\n}}");
    text
}
