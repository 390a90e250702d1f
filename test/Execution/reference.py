#!/usr/bin/env python3
"""Independent JAX reference for a Blueprint training step.

Written from test/Execution/EXECUTION.md ("What a Blueprint training step
computes") alone: the forward math of the GPT and Llama blocks, the step
(forward, backward from `block.out.grad`, gradients summed over the global
batch, one optimizer step) and the tensor names of its files. The backward is
`jax.vjp` of the forward; nothing here writes a gradient by hand.

Subcommands (see test/Execution/README.md):
  make-inputs SPEC --seed N --params P.safetensors --inputs I.safetensors
  step SPEC --params P --inputs I -o WANT.safetensors [--f64]
  compare WANT.safetensors GOT.safetensors
  fd-check SPEC --seed N [--entries K]

Run it with the venv that tools/setup-python.sh makes (target/venv).
"""

import argparse
import json
import math
import os
import sys
from dataclasses import dataclass

# Tiny tensors: one thread is as fast as two, and the machine is shared.
os.environ.setdefault(
    "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
)
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402

import jax  # noqa: E402

# float64 must be available for --f64 and fd-check; every array below is given
# its dtype explicitly, so enabling it does not widen the float32 step.
jax.config.update("jax_enable_x64", True)
jax.config.update("jax_default_matmul_precision", "highest")
import jax.numpy as jnp  # noqa: E402
from safetensors.numpy import load_file, save_file  # noqa: E402

NORM_EPS = 1e-5  # LayerNorm and RMSNorm, EXECUTION.md
TOLERANCE = 1e-4  # |got - want| <= 1e-4 * max(1, |want|), EXECUTION.md


class SpecError(Exception):
    """A spec the reference does not accept (the message says why)."""


# ---------------------------------------------------------------------------
# The training spec


@dataclass(frozen=True)
class Spec:
    hidden: int
    ffn_hidden: int
    seq_len: int
    heads: int
    head_dim: int
    blocks: int
    norm: str  # "layer_norm" | "rms_norm"
    gated_mlp: bool
    kv_heads: int
    rope: bool
    rope_theta: float
    global_batch: int
    microbatch: int
    optimizer: dict  # {"kind": "sgd", "lr"} | {"kind": "adam", "lr", "beta1", "beta2", "eps"}
    # Variants of the GPT MLP that edited ModelIR computes (not spec fields):
    # the activation ("gelu" as EXECUTION.md, "relu" or "silu"), and a bias
    # `mlp.fc1.bias` [ffn] added to fc1's output before the activation.
    activation: str = "gelu"
    fc1_bias: bool = False

    def block_parameters(self):
        """(id, shape) of one block's parameters, in EXECUTION.md's order."""
        h, f = self.hidden, self.ffn_hidden
        qw, kvw = self.heads * self.head_dim, self.kv_heads * self.head_dim
        if self.norm == "layer_norm":
            attn_norm = [("attn.ln.scale", (h,)), ("attn.ln.bias", (h,))]
            mlp_norm = [("mlp.ln.scale", (h,)), ("mlp.ln.bias", (h,))]
        else:
            attn_norm = [("attn.norm.scale", (h,))]
            mlp_norm = [("mlp.norm.scale", (h,))]
        attn = [
            ("attn.q.weight", (h, qw)),
            ("attn.k.weight", (h, kvw)),
            ("attn.v.weight", (h, kvw)),
            ("attn.proj.weight", (qw, h)),
        ]
        if self.gated_mlp:
            mlp = [("mlp.gate.weight", (h, f)), ("mlp.up.weight", (h, f)), ("mlp.down.weight", (f, h))]
        else:
            mlp = [("mlp.fc1.weight", (h, f)), ("mlp.fc2.weight", (f, h))]
            if self.fc1_bias:
                mlp.insert(1, ("mlp.fc1.bias", (f,)))
        return attn_norm + attn + mlp_norm + mlp

    def parameters(self):
        """(name, shape) of every parameter: `blocks.<i>.<id>`."""
        return [
            ("blocks.%d.%s" % (i, pid), shape)
            for i in range(self.blocks)
            for pid, shape in self.block_parameters()
        ]

    def activation_shape(self):
        return (self.global_batch, self.seq_len, self.hidden)


DEFAULT_OPTIMIZER = {"kind": "adam", "lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8}


def _positive_int(section, key, value):
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise SpecError("%s.%s must be a positive integer, got %r" % (section, key, value))
    return value


def _number(where, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SpecError("%s must be a finite number, got %r" % (where, value))
    return float(value)


def _optimizer(raw):
    if raw is None:
        return dict(DEFAULT_OPTIMIZER)
    if not isinstance(raw, dict):
        raise SpecError("workload.optimizer must be an object, got %r" % (raw,))
    kind = raw.get("kind")
    fields = {"sgd": ["lr"], "adam": ["lr", "beta1", "beta2", "eps"]}.get(kind)
    if fields is None:
        raise SpecError('workload.optimizer.kind must be "sgd" or "adam", got %r' % (kind,))
    extra = sorted(set(raw) - set(fields) - {"kind"})
    if extra:
        raise SpecError("workload.optimizer (%s) has fields the step does not define: %s" % (kind, ", ".join(extra)))
    missing = [f for f in fields if f not in raw]
    if missing:
        raise SpecError("workload.optimizer (%s) lacks %s" % (kind, ", ".join(missing)))
    out = {"kind": kind}
    for f in fields:
        out[f] = _number("workload.optimizer." + f, raw[f])
    if kind == "adam" and not (0 <= out["beta1"] < 1 and 0 <= out["beta2"] < 1):
        raise SpecError("workload.optimizer: beta1 and beta2 must lie in [0, 1)")
    return out


def load_spec(path):
    with open(path) as f:
        raw = json.load(f)
    model, workload = raw.get("model"), raw.get("workload")
    if not isinstance(model, dict) or not isinstance(workload, dict):
        raise SpecError("a training spec has objects 'model' and 'workload'")
    ints = {}
    for key in ["hidden", "ffn_hidden", "seq_len", "heads", "head_dim", "blocks"]:
        if key not in model:
            raise SpecError("model.%s is missing" % key)
        ints[key] = _positive_int("model", key, model[key])
    for key in ["global_batch", "microbatch"]:
        if key not in workload:
            raise SpecError("workload.%s is missing (is this an inference spec?)" % key)
        ints[key] = _positive_int("workload", key, workload[key])

    norm = model.get("norm", "layer_norm")
    if norm not in ("layer_norm", "rms_norm"):
        raise SpecError('model.norm must be "layer_norm" or "rms_norm", got %r' % (norm,))
    gated_mlp = model.get("gated_mlp", False)
    rope = model.get("rope", False)
    for key, value in [("gated_mlp", gated_mlp), ("rope", rope)]:
        if not isinstance(value, bool):
            raise SpecError("model.%s must be true or false, got %r" % (key, value))
    kv_heads = _positive_int("model", "kv_heads", model.get("kv_heads", ints["heads"]))
    if ints["heads"] % kv_heads:
        raise SpecError("model.kv_heads = %d must divide model.heads = %d" % (kv_heads, ints["heads"]))
    if rope and ints["head_dim"] % 2:
        raise SpecError("model.rope needs an even head_dim, got %d" % ints["head_dim"])
    rope_theta = _number("model.rope_theta", model.get("rope_theta", 10000.0))
    if rope_theta <= 0:
        raise SpecError("model.rope_theta must be positive")
    dropout = _number("model.dropout", model.get("dropout", 0.0))
    if dropout != 0:
        raise SpecError("model.dropout = %g: the reference supports only p = 0 (dropout is then the identity)" % dropout)

    datatype = workload.get("datatype")
    if datatype != "float32":
        raise SpecError('workload.datatype must be "float32" for an executed step, got %r' % (datatype,))
    # The layout of EXECUTION.md: DP replica r owns B/dp rows, cut into
    # microbatches of `microbatch` rows. The mapping never changes the result;
    # dp is read only to check that the layout exists.
    dp = (raw.get("mapping") or {}).get("dp", 1)
    dp = _positive_int("mapping", "dp", dp)
    if ints["global_batch"] % (dp * ints["microbatch"]):
        raise SpecError(
            "workload.global_batch = %d is not dp (%d) x a whole number of microbatches of %d rows"
            % (ints["global_batch"], dp, ints["microbatch"])
        )
    return Spec(
        norm=norm,
        gated_mlp=gated_mlp,
        kv_heads=kv_heads,
        rope=rope,
        rope_theta=rope_theta,
        optimizer=_optimizer(workload.get("optimizer")),
        **ints,
    )


# ---------------------------------------------------------------------------
# The forward (EXECUTION.md, "The GPT block" and "The Llama block")


def layer_norm(x, scale, bias):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)  # biased, as torch
    return (x - mean) / jnp.sqrt(var + NORM_EPS) * scale + bias


def rms_norm(x, scale):
    return x / jnp.sqrt(jnp.mean(jnp.square(x), axis=-1, keepdims=True) + NORM_EPS) * scale


def gelu_tanh(u):
    return 0.5 * u * (1 + jnp.tanh(math.sqrt(2 / math.pi) * (u + 0.044715 * u**3)))


def silu(u):
    return u / (1 + jnp.exp(-u))


def relu(u):
    return jnp.maximum(u, 0)


ACTIVATIONS = {"gelu": gelu_tanh, "relu": relu, "silu": silu}


def rope_tables(spec, dtype):
    """cos(tθ_j), sin(tθ_j) of shape [s, d/2], θ_j = theta^(-2j/d). The angles
    are computed in float64 and rounded once to `dtype` (the most exact
    reading of the formula; an implementation computing them in float32
    differs by ~1e-6 relative at these sizes, far inside the tolerance)."""
    d = spec.head_dim
    t = np.arange(spec.seq_len, dtype=np.float64)[:, None]
    theta = spec.rope_theta ** (-2.0 * np.arange(d // 2, dtype=np.float64) / d)
    angle = t * theta[None, :]
    return jnp.asarray(np.cos(angle), dtype), jnp.asarray(np.sin(angle), dtype)


def rope(x, cos, sin):
    """Rotate-half RoPE on x [b, s, heads, d] at positions 0..s-1."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    return jnp.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)


def attention(spec, p, a, tables):
    b, s, _ = a.shape
    d, hq, hkv = spec.head_dim, spec.heads, spec.kv_heads
    # Head i is columns [i*d, (i+1)*d): a row-major reshape of the last axis.
    q = (a @ p["attn.q.weight"]).reshape(b, s, hq, d)
    k = (a @ p["attn.k.weight"]).reshape(b, s, hkv, d)
    v = (a @ p["attn.v.weight"]).reshape(b, s, hkv, d)
    if spec.rope:
        q, k = rope(q, *tables), rope(k, *tables)
    # Query head i uses key/value head i // (heads / kv_heads): repeating each
    # KV head heads/kv_heads times in place gives exactly that order.
    group = hq // hkv
    k, v = jnp.repeat(k, group, axis=2), jnp.repeat(v, group, axis=2)
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(d)
    query = jnp.arange(s)[:, None]
    key = jnp.arange(s)[None, :]
    scores = jnp.where(key > query, -jnp.inf, scores)  # causal: -inf where key > query
    probs = jax.nn.softmax(scores, axis=-1)
    ctx = jnp.einsum("bhqk,bkhd->bqhd", probs, v).reshape(b, s, hq * d)  # concat_i
    return ctx @ p["attn.proj.weight"]


def block_forward(spec, p, x, tables):
    """One block; p maps the block's ids to arrays."""
    if spec.norm == "layer_norm":
        a = layer_norm(x, p["attn.ln.scale"], p["attn.ln.bias"])
    else:
        a = rms_norm(x, p["attn.norm.scale"])
    x1 = x + attention(spec, p, a, tables)
    if spec.norm == "layer_norm":
        c = layer_norm(x1, p["mlp.ln.scale"], p["mlp.ln.bias"])
    else:
        c = rms_norm(x1, p["mlp.norm.scale"])
    if spec.gated_mlp:
        mlp = (silu(c @ p["mlp.gate.weight"]) * (c @ p["mlp.up.weight"])) @ p["mlp.down.weight"]
    else:
        u = c @ p["mlp.fc1.weight"]
        if spec.fc1_bias:
            u = u + p["mlp.fc1.bias"]
        mlp = ACTIVATIONS[spec.activation](u) @ p["mlp.fc2.weight"]
    return x1 + mlp


def forward(spec, params, x):
    """block.out of blocks.0 ... blocks.(L-1); params maps full names to arrays."""
    tables = rope_tables(spec, x.dtype) if spec.rope else None
    for i in range(spec.blocks):
        prefix = "blocks.%d." % i
        p = {name[len(prefix):]: value for name, value in params.items() if name.startswith(prefix)}
        x = block_forward(spec, p, x, tables)
    return x


# ---------------------------------------------------------------------------
# The step (EXECUTION.md, "The step")


def microbatch_rows(spec):
    """Row ranges of the global batch's microbatches, in order (replica r's
    microbatch j is the (r * per_replica + j)-th range)."""
    m = spec.microbatch
    return [(start, start + m) for start in range(0, spec.global_batch, m)]


def optimizer_step(spec, w, g):
    """(new w, extra tensors) for one parameter: SGD, or Adam at t = 1 from zero
    state as torch.optim.Adam without weight decay."""
    o = spec.optimizer
    if o["kind"] == "sgd":
        return w - o["lr"] * g, {}
    m = (1 - o["beta1"]) * g
    v = (1 - o["beta2"]) * jnp.square(g)
    m_hat = m / (1 - o["beta1"])
    v_hat = v / (1 - o["beta2"])
    return w - o["lr"] * m_hat / (jnp.sqrt(v_hat) + o["eps"]), {".adam_m": m, ".adam_v": v}


def compute_step(spec, params, inputs, dtype):
    """Every output tensor of the step, as arrays of `dtype`.

    params: name -> array; inputs: "block.in", "block.out.grad". Forward and
    backward run per microbatch; the gradients are summed."""
    params = {n: jnp.asarray(v, dtype) for n, v in params.items()}
    x = jnp.asarray(inputs["block.in"], dtype)
    dy = jnp.asarray(inputs["block.out.grad"], dtype)

    def forward_backward(p, xb, dyb):
        out, vjp = jax.vjp(lambda p, xb: forward(spec, p, xb), p, xb)
        dp, dx = vjp(dyb)
        return out, dp, dx

    def finish(params, per_microbatch):
        outs, dps, dxs = zip(*per_microbatch)
        result = {"block.out": jnp.concatenate(outs), "block.in.grad": jnp.concatenate(dxs)}
        for name, w in params.items():
            g = sum(dp[name] for dp in dps)  # summed over the global batch
            new_w, extra = optimizer_step(spec, w, g)
            result[name + ".grad"] = g
            result[name] = new_w
            for suffix, value in extra.items():
                result[name + suffix] = value
        return result

    # jax.jit only saves time (op-by-op dispatch compiles every primitive for
    # every shape); the traced math is the same.
    forward_backward = jax.jit(forward_backward)
    per_microbatch = [forward_backward(params, x[lo:hi], dy[lo:hi]) for lo, hi in microbatch_rows(spec)]
    result = jax.jit(finish)(params, per_microbatch)
    for name, value in result.items():
        assert value.dtype == dtype, (name, value.dtype)
    return result


# ---------------------------------------------------------------------------
# Files


def make_inputs(spec, seed):
    """Random parameters and inputs (float32) that keep activations O(1):
    weights ~ N(0, 1/in), norm scales ~ 1 + 0.1 N, biases ~ 0.1 N, block.in
    and block.out.grad ~ N(0, 1)."""
    rng = np.random.default_rng(seed)
    params = {}
    for name, shape in spec.parameters():
        if name.endswith(".weight"):
            value = rng.standard_normal(shape) / math.sqrt(shape[0])
        elif name.endswith(".scale"):
            value = 1 + 0.1 * rng.standard_normal(shape)
        elif name.endswith(".bias"):
            value = 0.1 * rng.standard_normal(shape)
        else:
            raise AssertionError(name)
        params[name] = value.astype(np.float32)
    shape = spec.activation_shape()
    inputs = {
        "block.in": rng.standard_normal(shape).astype(np.float32),
        "block.out.grad": rng.standard_normal(shape).astype(np.float32),
    }
    return params, inputs


def check_tensors(what, tensors, expected):
    """Raise SpecError unless `tensors` holds exactly `expected` (name -> shape)."""
    missing = sorted(set(expected) - set(tensors))
    extra = sorted(set(tensors) - set(expected))
    problems = []
    if missing:
        problems.append("missing " + ", ".join(missing))
    if extra:
        problems.append("unexpected " + ", ".join(extra))
    for name in sorted(set(expected) & set(tensors)):
        if tuple(tensors[name].shape) != tuple(expected[name]):
            problems.append("%s has shape %s, the spec gives %s" % (name, list(tensors[name].shape), list(expected[name])))
        elif tensors[name].dtype != np.float32:
            problems.append("%s is %s, the spec's datatype is float32" % (name, tensors[name].dtype))
    if problems:
        raise SpecError("%s: %s" % (what, "; ".join(problems)))


def load_step_files(spec, params_path, inputs_path):
    params = load_file(params_path)
    inputs = load_file(inputs_path)
    check_tensors(params_path, params, dict(spec.parameters()))
    shape = spec.activation_shape()
    check_tensors(inputs_path, inputs, {"block.in": shape, "block.out.grad": shape})
    return params, inputs


def save(path, tensors, dtype=np.float32):
    save_file({n: np.ascontiguousarray(np.asarray(v), dtype=dtype) for n, v in sorted(tensors.items())}, path)


# At step 1 Adam moves w by lr * g / (|g| + eps), about lr * sign(g): where a
# summed gradient is as small as float32 rounding noise (observed ~1e-5
# absolute on entries of tensors whose largest gradient is ~40, i.e. ~3e-7 of
# it), two correct float32 runs can move w in different directions, up to
# 2 * lr apart, past the 1e-4 tolerance. (Just above the noise the update is
# already stable: its change is lr * eps * noise / g^2, below 1e-7 once |g| is
# 1e-6 past the noise.) The step warns when the inputs have such an entry
# (threshold: ~3x that noise), so a test can pick another seed.
NEAR_ZERO_GRADIENT = 1e-6


def warn_sign_sensitive(spec, result, out=sys.stderr):
    if spec.optimizer["kind"] != "adam":
        return
    count, smallest = 0, None
    for name, g in result.items():
        if not name.endswith(".grad") or name == "block.in.grad":
            continue
        a = np.abs(np.asarray(g, np.float64))
        near = a < NEAR_ZERO_GRADIENT * a.max()
        count += int(near.sum())
        if near.any():
            at = np.unravel_index(np.argmin(a), a.shape)
            ratio = a[at] / a.max()
            if smallest is None or ratio < smallest[0]:
                smallest = (ratio, name, list(map(int, at)), float(np.asarray(g)[at]))
    if count:
        print(
            "reference.py: warning: %d gradient entries are within float32 noise of zero "
            "(|g| < %g * max |g| of their tensor; smallest: %s %s = %.3g); Adam's update "
            "there is about lr * sign(g), so a float32 run may differ from this reference "
            "by up to 2 * lr in those weights: consider another seed"
            % (count, NEAR_ZERO_GRADIENT, smallest[1], smallest[2], smallest[3]),
            file=out,
        )


# ---------------------------------------------------------------------------
# compare


def compare(want, got, out=sys.stdout):
    """Print the verdict; return True when `got` matches `want`."""
    ok = True
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    if missing:
        ok = False
        print("missing from GOT: " + ", ".join(missing), file=out)
    if extra:
        ok = False
        print("not in WANT: " + ", ".join(extra), file=out)
    worst = (0.0, None)
    for name in sorted(set(want) & set(got)):
        w, g = want[name], got[name]
        if w.shape != g.shape or w.dtype != g.dtype:
            ok = False
            print("%s: GOT is %s %s, WANT is %s %s" % (name, g.dtype, list(g.shape), w.dtype, list(w.shape)), file=out)
            continue
        w64, g64 = w.astype(np.float64), g.astype(np.float64)
        rel = np.abs(g64 - w64) / np.maximum(1.0, np.abs(w64))
        rel = np.where(np.isnan(rel), np.inf, rel)  # a NaN anywhere is a mismatch
        bad = ~(rel <= TOLERANCE)
        if rel.size:
            at = np.unravel_index(np.argmax(rel), rel.shape)
            if rel[at] > worst[0]:
                worst = (float(rel[at]), name)
        if bad.any():
            ok = False
            print(
                "%s: %d of %d elements off (|got - want| > %g * max(1, |want|)); worst at %s: got %.9g, want %.9g (relative error %.3g)"
                % (name, int(bad.sum()), bad.size, TOLERANCE, list(map(int, at)), g64[at], w64[at], rel[at]),
                file=out,
            )
    if ok:
        where = " (%s)" % worst[1] if worst[1] else ""
        print("compare: %d tensors match, worst relative error %.3g%s" % (len(want), worst[0], where), file=out)
    return ok


# ---------------------------------------------------------------------------
# fd-check

# Central-difference step. Parameters and inputs are O(1), so an absolute step
# is fine. For L = sum(block.out * block.out.grad) in float64:
#   truncation error  ~ h^2/6 * |d^3 L| ~ 2e-11 * |d^3 L|, with |d^3 L| = O(1-100);
#   rounding error    ~ (rounding of L, ~ 1e-16 * sqrt(B*s*h) * O(1) ~ 1e-14) / h ~ 1e-9.
# Both are below ~1e-8 at these sizes, so FD_TOLERANCE = 1e-6 relative (to
# max(1, |gradient|), as a gradient entry can be near zero) leaves two orders
# of margin, while a wrong gradient (wrong sign, factor, missing term,
# transposed index) is off by O(1).
FD_STEP = 1e-5
FD_TOLERANCE = 1e-6


def fd_check(spec, seed, entries, out=sys.stdout):
    params, inputs = make_inputs(spec, seed)
    dtype = jnp.float64
    step = compute_step(spec, params, inputs, dtype)  # autodiff, per microbatch, summed

    p64 = {n: np.asarray(v, np.float64) for n, v in params.items()}
    x64 = np.asarray(inputs["block.in"], np.float64)
    dy = jnp.asarray(inputs["block.out.grad"], dtype)

    # The loss whose gradient block.out.grad is: L = sum(block.out * block.out.grad),
    # here over the whole global batch at once (not per microbatch), so the
    # check also covers the microbatch split and the summation.
    loss = jax.jit(lambda p, x: jnp.sum(forward(spec, p, x) * dy))

    def loss_at(name, index, delta):
        p = dict(p64)
        x = x64
        if name == "block.in":
            x = x64.copy()
            x[index] += delta
        else:
            p[name] = p64[name].copy()
            p[name][index] += delta
        return float(loss(p, x))

    # One entry of block.in, the rest in distinct parameters chosen at random.
    rng = np.random.default_rng(seed + 1_000_003)
    names = [n for n, _ in spec.parameters()]
    picks = ["block.in"] + list(rng.choice(names, size=min(entries - 1, len(names)), replace=False))
    worst = 0.0
    ok = True
    for name in picks:
        shape = x64.shape if name == "block.in" else p64[name].shape
        index = tuple(int(rng.integers(n)) for n in shape)
        grad_name = "block.in.grad" if name == "block.in" else name + ".grad"
        autodiff = float(np.asarray(step[grad_name])[index])
        fd = (loss_at(name, index, FD_STEP) - loss_at(name, index, -FD_STEP)) / (2 * FD_STEP)
        err = abs(fd - autodiff) / max(1.0, abs(autodiff))
        worst = max(worst, err)
        verdict = "ok" if err <= FD_TOLERANCE else "BAD"
        ok &= err <= FD_TOLERANCE
        print("%-26s %-14s autodiff %+.12e  fd %+.12e  rel %.2e %s" % (grad_name, list(index), autodiff, fd, err, verdict), file=out)
    print("fd-check: %d entries, worst relative error %.2e (bound %g): %s" % (len(picks), worst, FD_TOLERANCE, "pass" if ok else "FAIL"), file=out)
    return ok, worst


# ---------------------------------------------------------------------------
# CLI


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("make-inputs", help="random parameters and inputs for a spec")
    p.add_argument("spec")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--params", required=True)
    p.add_argument("--inputs", required=True)

    p = sub.add_parser("step", help="the step's output tensors")
    p.add_argument("spec")
    p.add_argument("--params", required=True)
    p.add_argument("--inputs", required=True)
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--f64", action="store_true", help="compute in float64 (the file is float32 still)")

    p = sub.add_parser("compare", help="GOT against WANT within the tolerance")
    p.add_argument("want")
    p.add_argument("got")

    p = sub.add_parser("fd-check", help="autodiff gradients against float64 central differences")
    p.add_argument("spec")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--entries", type=int, default=6)

    args = parser.parse_args(argv)
    try:
        if args.command == "make-inputs":
            spec = load_spec(args.spec)
            params, inputs = make_inputs(spec, args.seed)
            save(args.params, params)
            save(args.inputs, inputs)
            return 0
        if args.command == "step":
            spec = load_spec(args.spec)
            params, inputs = load_step_files(spec, args.params, args.inputs)
            result = compute_step(spec, params, inputs, jnp.float64 if args.f64 else jnp.float32)
            save(args.output, result)
            warn_sign_sensitive(spec, result)
            return 0
        if args.command == "compare":
            return 0 if compare(load_file(args.want), load_file(args.got)) else 1
        if args.command == "fd-check":
            if args.entries < 1:
                raise SpecError("--entries must be at least 1")
            ok, _ = fd_check(load_spec(args.spec), args.seed, args.entries)
            return 0 if ok else 1
    except SpecError as error:
        print("reference.py: %s" % error, file=sys.stderr)
        return 2
    except (OSError, ValueError, json.JSONDecodeError) as error:
        print("reference.py: %s" % error, file=sys.stderr)
        return 2
    raise AssertionError(args.command)


if __name__ == "__main__":
    sys.exit(main())
