#!/usr/bin/env python3
"""One execution case: random parameters and inputs for SPEC (the JAX
reference's make-inputs), the step imported into ModelIR (and decomposed
with --decompose), run by `blueprint-run --train-step`, and every output
compared with the reference computed in float64 (EXECUTION.md's tolerance).

usage: run_case.py SPEC --seed N --work DIR [--decompose] [--edit E ...] [--reference-f32]
                   [--distribute [--ranks N | --mpirun N]]

--edit applies an edit of test/Transforms/Inputs/edit-block.py to the
decomposed block (gelu-to-relu, gelu-to-silu, fc1-bias) and computes the
reference of the edited block.
--distribute runs distribute-transformer-training on the decomposed block
(the spec's mapping: tp, dp, recompute) and runs the derived program's step
on every rank of its mesh (--ranks passes a world size through; --mpirun N
runs it under `mpirun -np N`, one process per rank).
Prints the comparison's summary; exits 1 on any difference or failure.
Run with the reference's venv python (tools/setup-python.sh).
"""
import argparse
import dataclasses
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = os.path.join(HERE, "..", "reference.py")
EDIT = os.path.join(HERE, "..", "..", "Transforms", "Inputs", "edit-block.py")
# What each edit makes the block compute, as the reference's variants.
VARIANTS = {"gelu-to-relu": {"activation": "relu"}, "gelu-to-silu": {"activation": "silu"}, "fc1-bias": {"fc1_bias": True}}


def run(argv, **kw):
    result = subprocess.run(argv, capture_output=True, text=True, **kw)
    if result.returncode != 0:
        sys.stderr.write(f"run_case: {' '.join(argv)} failed ({result.returncode})\n{result.stdout}{result.stderr}")
        sys.exit(1)
    return result


def main():
    sys.path.insert(0, os.path.dirname(REFERENCE))
    import reference as ref  # one JAX import for every step of the case

    p = argparse.ArgumentParser()
    p.add_argument("spec")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--decompose", action="store_true")
    p.add_argument("--edit", action="append", default=[], choices=sorted(VARIANTS))
    p.add_argument("--reference-f32", action="store_true", help="compare with the float32 reference")
    p.add_argument("--distribute", action="store_true", help="run the derived program on its mesh")
    p.add_argument("--ranks", type=int)
    p.add_argument("--mpirun", type=int)
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    f = lambda name: os.path.join(a.work, name)
    spec = ref.load_spec(a.spec)
    for edit in a.edit:
        spec = dataclasses.replace(spec, **VARIANTS[edit])
    params, inputs = ref.make_inputs(spec, a.seed)
    ref.save(f("p.safetensors"), params)
    ref.save(f("i.safetensors"), inputs)
    run(["blueprint-translate", "--import-transformer-training", a.spec, "-o", f("step.mlir")])
    step = f("step.mlir")
    if a.decompose or a.edit or a.distribute:
        run(["blueprint-opt", step, "--model-decompose-transformer", "-o", f("decomposed.mlir")])
        step = f("decomposed.mlir")
    if a.edit:
        with open(step) as block, open(f("edited.mlir"), "w") as edited:
            subprocess.run([sys.executable, EDIT, *a.edit], stdin=block, stdout=edited, check=True)
        step = f("edited.mlir")
    ranks, launcher = [], []
    if a.distribute:
        run(["blueprint-opt", step, "--distribute-transformer-training", "-o", f("dist.mlir")])
        step = f("dist.mlir")
        ranks = ["--ranks", str(a.ranks)] if a.ranks else []
        launcher = ["mpirun", "-np", str(a.mpirun)] if a.mpirun else []
    run([*launcher, "blueprint-run", step, *ranks, "--train-step", "--params", f("p.safetensors"), "--inputs", f("i.safetensors"), "-o", f("got.safetensors")])
    want = ref.compute_step(spec, params, inputs, ref.jnp.float32 if a.reference_f32 else ref.jnp.float64)
    ref.save(f("want.safetensors"), want)
    ok = ref.compare(ref.load_file(f("want.safetensors")), ref.load_file(f("got.safetensors")))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
