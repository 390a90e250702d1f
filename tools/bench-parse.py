#!/usr/bin/env python3
"""Parse + verify + print of a `dist` module: blueprint-opt against stock
mlir-opt, with wall time and peak memory (issue 10's benchmark).

The modules are real: megatron-126M's training step (PP 4, DP 2) unrolled
by `dist-unroll-schedule`, in the generic form, at about 10k, 100k and 1M
ops (the microbatch count sets the size). Each tool runs single-threaded
on the same file:

  blueprint-opt FILE --mlir-print-op-generic -o OUT   (C++ dialects + Rust verifiers)
  mlir-opt --irdl-file=blueprint.irdl.mlir --mlir-disable-threading FILE -o OUT
  mlir-opt --irdl-file=... --mlir-disable-threading --mlir-print-op-generic FILE -o OUT
  mlir-opt --load-dialect-plugin=libblueprint.so --mlir-disable-threading FILE -o OUT   (if built)

The ratios are against the second (stock mlir-opt as a user runs it; it
prints `builtin.module` and `func.func` in their custom form and so
verifies the module again before printing). The third writes exactly the
bytes blueprint-opt writes, without that second verification: the strict
like-for-like row. Properties are not an option for Blueprint's ops: IRDL
(extensible) dialects reject the `<{...}>` generic form they print.
CPU seconds (user + system) are shown beside wall seconds: on a shared
machine they vary less.

Usage: tools/bench-parse.py [--bin-dir target/release] [--sizes 10000,100000,1000000] [--runs 3]
Prints one row per size and tool (median of the runs) and the ratios.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MLIR_OPT = "/usr/lib/llvm-22/bin/mlir-opt"
SPEC = {
    "model": {"name": "megatron-126M", "hidden": 768, "ffn_hidden": 3072, "seq_len": 2048, "heads": 12, "head_dim": 64,
              "blocks": 12},
    "workload": {"global_batch": 16, "microbatch": 1, "datatype": "float16"},
    "mapping": {"tp": 1, "pp": 4, "dp": 2, "pipeline_interleaving": 1, "recompute": "none", "tp_comm": "ar",
                "seq_par_ag_redo": False, "fused_activation": True, "optimizer_sharding": False},
}


def run(argv):
    """Wall seconds, peak RSS (MiB) and CPU seconds of one run."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"bench-parse: {' '.join(argv)} failed:\n{err}")
    return wall, usage.ru_maxrss / 1024.0, usage.ru_utime + usage.ru_stime


def module_of(bin_dir, tmp, microbatches):
    spec = json.loads(json.dumps(SPEC))
    spec["workload"]["global_batch"] = 2 * microbatches
    spec_path = os.path.join(tmp, f"spec-{microbatches}.json")
    json.dump(spec, open(spec_path, "w"))
    out = os.path.join(tmp, f"dist-{microbatches}.mlir")
    imported = subprocess.run([os.path.join(bin_dir, "blueprint-translate"), "--import-transformer-training", spec_path],
                              check=True, stdout=subprocess.PIPE).stdout
    subprocess.run([os.path.join(bin_dir, "blueprint-opt"), "--pass-pipeline=builtin.module(distribute-transformer-training, dist-unroll-schedule)",
                    "--mlir-print-op-generic", "-o", out], input=imported, check=True)
    ops = sum(1 for line in open(out) if '"' in line and "(" in line)
    return out, ops


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", default=os.path.join(ROOT, "target", "release"))
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    # tools/build-shared.sh --release builds it.
    plugin = os.path.join(ROOT, "target", "shared", "release", "lib", "libblueprint.so")
    with tempfile.TemporaryDirectory() as tmp:
        irdl = os.path.join(tmp, "blueprint.irdl.mlir")
        with open(irdl, "w") as f:
            subprocess.run([os.path.join(args.bin_dir, "blueprint-opt"), "--print-irdl"], check=True, stdout=f)
        # Ops per microbatch, from a small module.
        _, small = module_of(args.bin_dir, tmp, 4)
        _, larger = module_of(args.bin_dir, tmp, 8)
        per_mb = (larger - small) / 4
        fixed = small - 4 * per_mb
        print(f"{'ops':>9} {'tool':<44} {'wall s':>8} {'cpu s':>7} {'peak MiB':>9} {'time ×':>7} {'cpu ×':>6} {'mem ×':>6}")
        for size in sizes:
            m = max(1, round((size - fixed) / per_mb))
            path, ops = module_of(args.bin_dir, tmp, m)
            out = os.path.join(tmp, "out.mlir")
            tools = [
                ("blueprint-opt", [os.path.join(args.bin_dir, "blueprint-opt"), path, "--mlir-print-op-generic", "-o", out]),
                ("mlir-opt --irdl-file", [MLIR_OPT, f"--irdl-file={irdl}", "--mlir-disable-threading", path, "-o", out]),
                ("mlir-opt --irdl-file --mlir-print-op-generic",
                 [MLIR_OPT, f"--irdl-file={irdl}", "--mlir-disable-threading", "--mlir-print-op-generic", path, "-o", out]),
            ]
            if os.path.exists(plugin):
                tools.append(("mlir-opt --load-dialect-plugin", [MLIR_OPT, f"--load-dialect-plugin={plugin}",
                                                                 "--mlir-disable-threading", path, "-o", out]))
            samples = {name: [] for name, _ in tools}
            # Interleaved, so that a change in the machine's load hits every tool.
            for _ in range(args.runs):
                for name, argv in tools:
                    samples[name].append(run(argv))
            # The median of each measure.
            results = {name: tuple(sorted(s[i] for s in runs)[len(runs) // 2] for i in range(3)) for name, runs in samples.items()}
            anchor = results["mlir-opt --irdl-file"]
            for name, (wall, rss, cpu) in results.items():
                print(f"{ops:>9} {name:<44} {wall:>8.2f} {cpu:>7.2f} {rss:>9.0f} {wall / anchor[0]:>7.2f} {cpu / anchor[2]:>6.2f} {rss / anchor[1]:>6.2f}")
            os.remove(path)


main()
