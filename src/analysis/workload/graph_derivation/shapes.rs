//! What the derivations need of a block's ops before they read sizes off
//! them, on plain data: the rules of the `model` dialect's verifier
//! (`dialect::model::verify`) for the op kinds the derivations count. A
//! block read off verified IR always passes; a [`BlockGraph`] built or
//! edited otherwise gets an error naming the op instead of a count read
//! out of range.

use super::super::graph::{BlockGraph, GraphOp, GraphOpKind};
use super::{at, GraphError};

/// Every operand of every op is defined by an earlier op (program order,
/// which the IR reader guarantees; the derivations' walks rely on it).
///
/// # Errors
/// The first op reading a value not defined before it.
pub(super) fn check_program_order(g: &BlockGraph) -> Result<(), GraphError> {
    for (op, node) in g.ops.iter().enumerate() {
        if node.operands.iter().any(|&v| g.values.get(v).is_none_or(|value| value.producer >= op)) {
            return Err(at(&node.id, "reads a value not defined before it"));
        }
        if node.results.iter().any(|&v| g.values.get(v).is_none_or(|value| value.producer != op)) {
            return Err(at(&node.id, "defines a value another op defines"));
        }
    }
    Ok(())
}

/// `node` has `operands` operands and at least `results` results.
///
/// # Errors
/// When it has not, at the op.
pub(super) fn check_arity(node: &GraphOp, operands: usize, results: usize) -> Result<(), GraphError> {
    if node.operands.len() != operands || node.results.len() < results {
        return Err(at(
            &node.id,
            format!(
                "has {} operands and {} results, but '{}' takes {operands} and {results}",
                node.operands.len(),
                node.results.len(),
                node.kind.op_name()
            ),
        ));
    }
    Ok(())
}

/// The operands, results and shapes of forward op `op` are what its kind
/// takes (the verifier's rules); other kinds pass.
///
/// # Errors
/// What does not fit, at the op.
pub(super) fn check_forward_op(g: &BlockGraph, op: usize) -> Result<(), GraphError> {
    let node = &g.ops[op];
    let shape = |v: usize| g.values[v].shape.as_slice();
    let arity = |operands: usize, results: usize| check_arity(node, operands, results);
    let same_as_input = || -> Result<(), GraphError> {
        let input = shape(node.operands[0]);
        if input.is_empty() || node.results.iter().any(|&r| shape(r) != input) {
            return Err(at(&node.id, format!("'{}' returns its input's shape, a tensor of rank at least 1", node.kind.op_name())));
        }
        Ok(())
    };
    let fail = |what: String| Err(at(&node.id, what));
    match &node.kind {
        GraphOpKind::Fork => {
            if node.operands.len() != 1 || node.results.is_empty() {
                return arity(1, 1);
            }
            same_as_input()
        }
        GraphOpKind::LayerNorm | GraphOpKind::RmsNorm => {
            let params = if node.kind == GraphOpKind::LayerNorm { 2 } else { 1 };
            arity(1 + params, 1)?;
            same_as_input()?;
            let width = shape(node.operands[0]).last().copied();
            if node.operands[1..].iter().any(|&p| shape(p).len() != 1 || shape(p).first().copied() != width) {
                return fail(format!("normalizes rows of {width:?} elements with parameters of another shape"));
            }
            Ok(())
        }
        GraphOpKind::Softmax { dim } => {
            arity(1, 1)?;
            same_as_input()?;
            if *dim >= shape(node.operands[0]).len() as u64 {
                return fail(format!("normalizes over dimension {dim} of a rank-{} tensor", shape(node.operands[0]).len()));
            }
            Ok(())
        }
        GraphOpKind::Gelu | GraphOpKind::Relu | GraphOpKind::Silu | GraphOpKind::Dropout => {
            arity(1, 1)?;
            same_as_input()
        }
        GraphOpKind::Rope { heads } => {
            arity(1, 1)?;
            same_as_input()?;
            let input = shape(node.operands[0]);
            if input.len() != 3 || *heads == 0 || input[2] % heads != 0 {
                return fail(format!("rotates {heads} heads of {input:?}: expects [b, s, heads x head_dim]"));
            }
            Ok(())
        }
        GraphOpKind::Add | GraphOpKind::Swiglu => {
            arity(2, 1)?;
            same_as_input()?;
            if shape(node.operands[1]) != shape(node.operands[0]) {
                return fail(format!("combines {:?} and {:?}: the shapes differ", shape(node.operands[0]), shape(node.operands[1])));
            }
            Ok(())
        }
        GraphOpKind::BiasAdd => {
            arity(2, 1)?;
            same_as_input()?;
            let (x, bias) = (shape(node.operands[0]), shape(node.operands[1]));
            if bias.len() != 1 || x.last() != bias.first() {
                return fail(format!("adds a bias {bias:?} to rows of {x:?}"));
            }
            Ok(())
        }
        GraphOpKind::Matmul => {
            arity(2, 1)?;
            let (x, w, y) = (shape(node.operands[0]), shape(node.operands[1]), shape(node.results[0]));
            let rows = |s: &[u64]| s[..s.len().saturating_sub(1)].to_vec();
            if x.len() < 2 || w.len() != 2 || x.last() != w.first() || y.last() != w.last() || rows(x) != rows(y) {
                return fail(format!("multiplies {x:?} by {w:?} into {y:?}: the shapes do not chain"));
            }
            Ok(())
        }
        GraphOpKind::AttentionScores { heads, kv_heads, head_dim } | GraphOpKind::AttentionContext { heads, kv_heads, head_dim } => {
            arity(2, 1)?;
            let scores = matches!(node.kind, GraphOpKind::AttentionScores { .. });
            let (l, r, y) = (shape(node.operands[0]), shape(node.operands[1]), shape(node.results[0]));
            let (h, kv, d) = (*heads, *kv_heads, *head_dim);
            if h == 0 || kv == 0 || d == 0 || h % kv != 0 {
                return fail(format!("has heads {h}, kv_heads {kv}, head_dim {d}: all positive, kv_heads dividing heads"));
            }
            let width = |n: u64| n.checked_mul(d);
            if r.len() != 3 || Some(r[2]) != width(kv) {
                return fail(format!("reads keys or values {r:?}: expected [b, s, kv_heads x head_dim]"));
            }
            let act = vec![r[0], r[1], width(h).unwrap_or(0)];
            let probs = vec![r[0], h, r[1], r[1]];
            let (input, output) = if scores { (&act, &probs) } else { (&probs, &act) };
            if l != input.as_slice() || y != output.as_slice() {
                return fail(format!("reads {l:?} into {y:?}: expected {input:?} into {output:?}"));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}
