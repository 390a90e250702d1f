//! How work is named across the layers: the ModelIR op an invocation of
//! the workload algebra belongs to, and the id of the template task a task
//! instance was made from. Every layer's readers use these, so no reader
//! depends on a pass for names.

use crate::analysis::workload::{Phase, PrimitiveInvocation};

/// The id a decomposed ModelIR gives the op an invocation comes from:
/// the forward op itself, or its `.agrad` / `.wgrad` / `.optim` companion.
/// Collectives belong to the op next to them: the layer norm before a TP
/// entry, the dropout after a TP exit (present in every MLP variant).
#[must_use]
pub fn model_op_id(inv: &PrimitiveInvocation) -> String {
    let base = match inv.source.as_str() {
        "attn.tp_entry" => "attn.ln",
        "attn.tp_exit" => "attn.dropout",
        "mlp.tp_entry" => "mlp.ln",
        "mlp.tp_exit" => "mlp.dropout",
        other => other,
    };
    model_op_id_for(base, inv.phase)
}

/// The id of the ModelIR op that does `phase`'s work of the forward op
/// `base`.
#[must_use]
pub fn model_op_id_for(base: &str, phase: Phase) -> String {
    match phase {
        Phase::ActivationGradient => format!("{base}.agrad"),
        Phase::WeightGradient => format!("{base}.wgrad"),
        Phase::Optimizer => format!("{base}.optim"),
        Phase::Prefill => format!("prefill.{base}"),
        Phase::Decode => format!("decode.{base}"),
        _ => base.to_string(),
    }
}

/// The ODS spelling of a workload phase.
#[must_use]
pub fn phase_name(phase: Phase) -> &'static str {
    crate::ir::ods::phase_case(phase).name()
}

/// The ODS spelling of a workload primitive (`collective` for the TP
/// collectives, which are ops of their own).
#[must_use]
pub fn primitive_name(primitive: crate::analysis::workload::Primitive) -> &'static str {
    match primitive {
        crate::analysis::workload::Primitive::Collective => "collective",
        other => crate::ir::ods::primitive_case(other).name(),
    }
}

/// The id of the derivation's invocation a task comes from: the task id
/// without its chunk prefix (`s1.c0.`) or instance suffix (`@b3.mb7`).
#[must_use]
pub fn base_id(id: &str) -> &str {
    // Byte scans: every task of a step goes through here.
    let bytes = id.as_bytes();
    let id = bytes.iter().position(|&b| b == b'@').map_or(id, |at| &id[..at]);
    let rest = match index_prefix(id, b's') {
        Some(rest) => rest,
        None => return id,
    };
    index_prefix(rest, b'c').unwrap_or(id)
}

/// What follows `<letter><digits>.` at the start of `text`, if it starts so.
fn index_prefix(text: &str, letter: u8) -> Option<&str> {
    let bytes = text.as_bytes();
    if bytes.first() != Some(&letter) {
        return None;
    }
    let digits = bytes[1..].iter().take_while(|b| b.is_ascii_digit()).count();
    // (A split at the first '.': the index part must be all digits.)
    (digits > 0 && bytes.get(1 + digits) == Some(&b'.')).then(|| &text[digits + 2..])
}

#[cfg(test)]
mod tests {
    #[test]
    fn base_ids_drop_chunk_prefix_and_instance_suffix() {
        assert_eq!(super::base_id("s1.c0.attn.q.fwd"), "attn.q.fwd");
        assert_eq!(super::base_id("s12.c3.mlp.fc1.agrad@b7.mb40"), "mlp.fc1.agrad");
        assert_eq!(super::base_id("attn.q.fwd"), "attn.q.fwd");
        assert_eq!(super::base_id("serve.x"), "serve.x");
        assert_eq!(super::base_id("s1.x.y"), "s1.x.y");
        assert_eq!(super::base_id("s1.c.y"), "s1.c.y");
        assert_eq!(super::base_id("s.c0.y"), "s.c0.y");
        assert_eq!(super::base_id("s1.c2"), "s1.c2");
        assert_eq!(super::base_id("s1.c2."), "");
        assert_eq!(super::base_id("s1x.c2.y@b0"), "s1x.c2.y");
    }
}
