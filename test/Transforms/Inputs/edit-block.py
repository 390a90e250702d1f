#!/usr/bin/env python3
"""Edits a decomposed training block (model-decompose-transformer's output,
on stdin) the way a user or a frontend would, and prints the edited IR.

    edit-block.py EDIT [EDIT ...] < block.mlir > edited.mlir

Edits (each fails loudly when the IR does not hold what it edits, so a
test can never pass on an unedited block):
  gelu-to-relu, gelu-to-silu  the MLP activation becomes ReLU / SiLU (same id)
  no-mlp-dropout              the MLP's dropout is removed (and its gradient)
  no-attn-residual            the attention's residual add is removed (and
                              its gradient; the fork's gradient sums one input)
  ffn=N                       the MLP is N wide instead of 256 (the types)
  gelu-to-batch-matmul        the activation becomes an op no training rule
                              covers (a batched matmul of its input with itself)
  no-gelu-agrad               the activation's gradient op is removed (its
                              input's gradient then reads the output's)
  fc1-bias                    a bias (a parameter) is added after mlp.fc1,
                              with its gradients and its Adam step
"""
import re
import sys


def fail(message):
    sys.exit(f"edit-block.py: {message}")


def op_line(lines, op_id):
    """Index of the line defining the op with ModelIR id `op_id`."""
    found = [i for i, l in enumerate(lines) if re.search(r'model\.\w+ "' + re.escape(op_id) + r'"', l)]
    if len(found) != 1:
        fail(f"expected one op '{op_id}', found {len(found)}")
    return found[0]


def result_name(line):
    m = re.match(r"\s*(%[\w#]+)(:\d+)? = ", line)
    if not m:
        fail(f"no result in: {line.strip()}")
    return m.group(1)


def operand_names(line):
    """SSA names inside the first parenthesised operand list."""
    m = re.search(r'"[^"]*"(?: of "[^"]*")?\(([^)]*)\)', line)
    if not m:
        fail(f"no operands in: {line.strip()}")
    return [o.strip() for o in m.group(1).split(",") if o.strip()]


def rename_uses(lines, old, new):
    pattern = re.compile(re.escape(old) + r"(?![\w#])")
    return [pattern.sub(new, l) if not l.lstrip().startswith(old + " =") else l for l in lines]


def remove_forwarding(lines, op_id, operand=0):
    """Deletes an op whose result equals one of its operands (dropout,
    residual, their gradients); its uses read that operand instead."""
    i = op_line(lines, op_id)
    line = lines[i]
    result, source = result_name(line), operand_names(line)[operand]
    del lines[i]
    return rename_uses(lines, result, source)


def replace_op_name(lines, op_id, old, new):
    i = op_line(lines, op_id)
    if f"model.{old} " not in lines[i]:
        fail(f"'{op_id}' is not a model.{old}")
    lines[i] = lines[i].replace(f"model.{old} ", f"model.{new} ")
    return lines


def edit(lines, name):
    if name in ("gelu-to-relu", "gelu-to-silu"):
        return replace_op_name(lines, "mlp.gelu", "gelu", name.split("-")[-1])
    if name == "no-mlp-dropout":
        lines = remove_forwarding(lines, "mlp.dropout")
        return remove_forwarding(lines, "mlp.dropout.agrad")
    if name == "no-attn-residual":
        lines = remove_forwarding(lines, "attn.residual")
        grad_line = lines[op_line(lines, "attn.residual.agrad")]
        through = operand_names(grad_line)[0]
        lines = remove_forwarding(lines, "attn.residual.agrad")
        # The fork's gradient no longer receives the residual's.
        i = op_line(lines, "attn.fork.agrad")
        grads = operand_names(lines[i])
        if through not in grads:
            fail("attn.fork.agrad does not read the residual's gradient")
        kept = [g for g in grads if g != through]
        lines[i] = lines[i].replace("(" + ", ".join(grads) + ")", "(" + ", ".join(kept) + ")", 1)
        types = re.search(r": \(([^)]*)\) ->", lines[i])
        parts = [t.strip() for t in types.group(1).split(",")]
        lines[i] = lines[i].replace(types.group(0), ": (" + ", ".join(parts[1:]) + ") ->", 1)
        return lines
    if name.startswith("ffn="):
        width = name.split("=", 1)[1]
        text = "\n".join(lines)

        def narrowed(m):
            dims = [width if d == "256" else d for d in m.group(1).split("x")]
            return "tensor<" + "x".join(dims) + "x" + m.group(2) + ">"

        edited = re.sub(r"tensor<((?:\d+x)*\d+)x(f\w+)>", narrowed, text)
        if edited == text:
            fail("no 256-wide MLP type to change")
        return edited.split("\n")
    if name == "gelu-to-batch-matmul":
        i = op_line(lines, "mlp.gelu")
        x = operand_names(lines[i])[0]
        ty = re.search(r"-> (tensor<[^>]*>)", lines[i]).group(1)
        ind = re.match(r"\s*", lines[i]).group(0)
        lines[i] = f'{ind}{result_name(lines[i])} = model.batch_matmul "mlp.gelu"({x}, {x}) : ({ty}, {ty}) -> {ty}'
        return lines
    if name == "no-gelu-agrad":
        return remove_forwarding(lines, "mlp.gelu.agrad")
    if name == "fc1-bias":
        i = op_line(lines, "mlp.fc1")
        h = result_name(lines[i])
        ty = re.search(r"-> (tensor<[^>]*>)", lines[i]).group(1)
        width = re.search(r"x(\d+)x(f\w+)>", ty)
        bias_ty = f"tensor<{width.group(1)}x{width.group(2)}>"
        ind = re.match(r"\s*", lines[i]).group(0)
        forward = [
            f'{ind}%fc1_bias = model.value "mlp.fc1.bias" parameter : {bias_ty}',
            f'{ind}%fc1_biased = model.bias_add "mlp.fc1.bias_add"({h}, %fc1_bias) : ({ty}, {bias_ty}) -> {ty}',
        ]
        lines = rename_uses(lines[: i + 1], h, "%fc1_biased")[: i + 1] + forward + rename_uses(lines[i + 1 :], h, "%fc1_biased")
        # Backward: the gelu's gradient flows into the bias add's, then fc1's.
        j = op_line(lines, "mlp.gelu.agrad")
        dg = result_name(lines[j])
        backward = [
            f'{ind}%fc1_bias_dx = model.activation_gradient "mlp.fc1.bias_add.agrad" of "mlp.fc1.bias_add"({dg}) wrt {h} : ({ty}, {ty}) -> {ty}',
            f'{ind}%fc1_bias_db = model.weight_gradient "mlp.fc1.bias_add.wgrad" of "mlp.fc1.bias_add"({dg}) wrt {h} : ({ty}, {ty}) -> {bias_ty}',
        ]
        rest = rename_uses(lines[j + 1 :], dg, "%fc1_bias_dx")
        lines = lines[: j + 1] + backward + rest
        # Its optimizer step, as fc1's weight's (the same rule and state),
        # before the function's return.
        w = op_line(lines, "mlp.fc1.optim")
        step_operands = operand_names(lines[w])
        rule = re.search(r"\) (sgd|adam) (.*?) : \(", lines[w])
        if not rule:
            fail("mlp.fc1.optim has no optimizer rule")
        suffixes = []
        for state in step_operands[2:]:
            defining = [l for l in lines if l.lstrip().startswith(state + " = model.value")]
            m = re.search(r'model\.value "mlp\.fc1\.weight\.(\w+)"', defining[0] if defining else "")
            if not m:
                fail(f"the state {state} of mlp.fc1.optim is not a model.value of mlp.fc1.weight")
            suffixes.append(m.group(1))
        k = max(idx for idx, l in enumerate(lines) if l.strip() == "return")
        state_ty = re.sub(r"x(f\w+)>", "xf32>", bias_ty)
        step = [f'{ind}%fc1_bias_{s} = model.value "mlp.fc1.bias.{s}" optimizer_state : {state_ty}' for s in suffixes]
        names = "".join(f", %fc1_bias_{s}" for s in suffixes)
        results = ", ".join([bias_ty] + [state_ty] * len(suffixes))
        operand_types = ", ".join([bias_ty, bias_ty] + [state_ty] * len(suffixes))
        count = "" if not suffixes else f":{1 + len(suffixes)}"
        step.append(
            f'{ind}%fc1_bias_next{count} = model.optimizer_step "mlp.fc1.bias.optim"(%fc1_bias, %fc1_bias_db{names}) {rule.group(1)} {rule.group(2)} '
            f": ({operand_types}) -> ({results})"
        )
        return lines[:k] + step + lines[k:]
    fail(f"unknown edit '{name}'")


def main():
    if len(sys.argv) < 2:
        fail(__doc__)
    lines = sys.stdin.read().split("\n")
    for name in sys.argv[1:]:
        lines = edit(lines, name)
    sys.stdout.write("\n".join(lines))


main()
