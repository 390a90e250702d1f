#!/usr/bin/env python3
"""The reference's time for one training step of SPEC: EXECUTION.md's step
(test/Execution/reference.py's forward, jax.vjp backward, gradients summed
over the microbatches, the optimizer) as one jax.jit function, on one
thread (XLA's CPU backend with its Eigen thread pool off), float32.
Prints `reference_seconds <median of N>`; cargo bench --bench train_step
runs it beside Blueprint's step.

usage: bench-train-step.py SPEC [--runs N]
"""
import os
import statistics
import sys
import time

os.environ["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "Execution"))
import reference as ref  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402


def main(argv):
    spec = ref.load_spec(argv[0])
    runs = int(argv[argv.index("--runs") + 1]) if "--runs" in argv else 20
    params, inputs = ref.make_inputs(spec, 1)
    params = {n: jnp.asarray(v) for n, v in params.items()}
    x, dy = jnp.asarray(inputs["block.in"]), jnp.asarray(inputs["block.out.grad"])

    @jax.jit
    def step(params, x, dy):
        grads, outs, dxs = None, [], []
        for lo, hi in ref.microbatch_rows(spec):
            out, vjp = jax.vjp(lambda p, xb: ref.forward(spec, p, xb), params, x[lo:hi])
            dp, dx = vjp(dy[lo:hi])
            outs.append(out)
            dxs.append(dx)
            grads = dp if grads is None else jax.tree_util.tree_map(jnp.add, grads, dp)
        new = {n: ref.optimizer_step(spec, w, grads[n]) for n, w in params.items()}
        return jnp.concatenate(outs), jnp.concatenate(dxs), grads, new

    jax.block_until_ready(step(params, x, dy))  # compile
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        jax.block_until_ready(step(params, x, dy))
        times.append(time.perf_counter() - start)
    print("reference_seconds %.6f" % statistics.median(times))


if __name__ == "__main__":
    main(sys.argv[1:])
