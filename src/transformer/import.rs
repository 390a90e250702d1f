//! Import of a Transformer spec into ModelIR: one function holding the
//! block's typed values (input activation, parameters, optimizer state) and
//! the coarse decoder op, plus the strategy binding as a module attribute.

use std::fmt::Write as _;

use super::binding::{spec_attribute_text, TRAINING_SPEC};
use crate::workload::{Datatype, TrainingSpec};

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
