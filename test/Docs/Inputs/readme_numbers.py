#!/usr/bin/env python3
"""Runs the commands behind the numbers the README states in prose and
checks that the README states what they give now.

Usage: readme_numbers.py README.md WORKDIR   (the tools on PATH)

Each check is a command, what to read from its output, and the README
phrase with the figure in it (whitespace and line breaks in the README do
not matter). A figure that changes fails here with the phrase to update.
"""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
O = os.path.join(ROOT, "test", "oracles", "calculon")
MODEL = lambda name: f"{O}/models/{name}.json"
SYSTEM = lambda name: f"{O}/systems/{name}.json"


def search(*args):
    run = subprocess.run(["blueprint-search", *args, "--top", "1", "--format", "json"], capture_output=True, text=True, check=True)
    return json.loads(run.stdout)


def tiers(work, count):
    system = json.load(open(SYSTEM("a100_nomem2")))
    system["networks"] = [dict(system["networks"][1]) for _ in range(count)]
    path = os.path.join(work, f"tiers{count}.json")
    json.dump(system, open(path, "w"))
    return path


def main():
    readme, work = sys.argv[1:3]
    os.makedirs(work, exist_ok=True)
    text = re.sub(r"\s+", " ", open(readme).read())
    checks = []

    def expect(phrase):
        checks.append(phrase)

    gpt3 = ["--system", SYSTEM("a100_80g"), "--procs", "64", "--max-batch", "64", "--no-offload"]
    plain, tp, fused = (search(MODEL("gpt3-175B"), *gpt3, *extra) for extra in
                        (["--no-tp-overlap"], [], ["--fused-activation", "all"]))
    expect(f"GPT-3 175B / 64 / batch 64 with `--no-offload` ({plain['totals']['configurations']:,} configurations without TP overlap; "
           f"{tp['totals']['configurations']:,} with it, {fused['totals']['configurations']:,} with both fused-activation choices too)")
    expect(f"for GPT-3 175B / 64 / batch 64 on a100_80g, {tp['totals']['calculon_configurations']:,} "
           f"({plain['totals']['calculon_configurations']:,} with `--no-tp-overlap`)")
    big = ["--system", SYSTEM("a100_80g"), "--procs", "12288", "--max-batch", "98304", "--no-offload"]
    big_plain, big_tp = search(MODEL("gpt3-175B"), *big, "--no-tp-overlap"), search(MODEL("gpt3-175B"), *big)
    expect(f"GPT-3 175B on 12,288 processors, batch 98,304 with `--no-offload` ({big_plain['totals']['configurations']:,} configurations "
           f"without TP overlap, {big_tp['totals']['configurations']:,} with it)")
    off = search(MODEL("megatron-126M"), "--system", SYSTEM("a100_80g"), "--procs", "4", "--max-batch", "4", "--no-tp-overlap")
    expect(f"megatron-126M / 4 / batch 4 / a100_80g ({off['totals']['configurations']:,} configurations, recorded from Calculon's own search")
    counts = [search(MODEL("megatron-126M"), "--system", tiers(work, t), "--procs", "16", "--max-batch", "16", "--no-tp-overlap")
              ["totals"]["configurations"] for t in (2, 8, 16)]
    expect(f"{counts[0]:,} on 2 tiers, {counts[1]:,} on 8, {counts[2]:,} on 16 for megatron-126M / 16 / batch 16 without TP overlap")
    m126 = search(MODEL("megatron-126M"), "--system", SYSTEM("a100_nomem2"), "--procs", "8", "--max-batch", "8", "--no-tp-overlap")
    expect(f"{m126['totals']['configurations']:,} configurations for megatron-126M on 8 processors (Calculon's count)")
    g13 = search(MODEL("gpt3-13B"), "--system", SYSTEM("a100_nomem2"), "--procs", "4", "--max-batch", "4")
    best = g13["top"][0]
    expect(f"4 processors / batch 4 / a100_nomem2 ({g13['totals']['configurations']:,} configurations,")
    expect(f"TP {best['mapping']['tp']} with {best['mapping']['tp_overlap']} tiling wins at {best['sample_rate']:.3f} samples/s")

    # --validate: the errors against Korthikanti et al. 2022.
    rows = json.loads(subprocess.run(["blueprint-search", "--validate", O, "--format", "json"], capture_output=True, text=True,
                                     check=True).stdout)["rows"]
    tab5 = [abs(r["error_percent"]) for r in rows if r["figure"] == "tab5"]
    expect(f"step time within {min(tab5):.1f}-{max(tab5):.1f}% of Table 5 ({sum(tab5) / len(tab5):.2f}% on average)")
    act = [abs(r["error_percent"]) for r in rows if r["quantity"] == "act_gib"]
    par = [r["error_percent"] for r in rows if r["quantity"] == "par_opt_gib"]
    expect(f"activation memory within {min(act):.2f}-{max(act):.1f}% of Figure 1, parameter and optimizer memory "
           f"{min(par):.1f}-{max(par):.1f}% below it")
    # --all: the listing of the space Calculon's llm-all-executions was run on.
    listed = search(MODEL("megatron-126M"), "--system", SYSTEM("a100_80g"), "--procs", "2", "--max-batch", "2")
    expect(f"the same {listed['totals']['configurations']:,} configurations (TP and DP overlap")

    # The estimate of the README's command (megatron-126M p4d2v3 on a100_80g).
    plan = os.path.join(work, "plan.mlir")
    spec = os.path.join(ROOT, "test", "Inputs", "specs", "megatron-126M-p4d2v3.json")
    imported = subprocess.run(["blueprint-translate", "--import-transformer-training", spec], capture_output=True, text=True, check=True)
    subprocess.run(["blueprint-opt", "--pass-pipeline=builtin.module(distribute-transformer-training, plan-transformer-training)", "-o", plan],
                   input=imported.stdout, text=True, check=True)
    estimate = json.loads(subprocess.run(["blueprint-translate", "--estimate", plan, "--system", SYSTEM("a100_80g"), "--tp-net", "0",
                                          "--pp-net", "1", "--dp-net", "1"], capture_output=True, text=True, check=True).stdout)
    t = estimate["timing_seconds"]
    overlapped = estimate["simulation"]["overlapped"]["total_time"]
    expect(f"the command above the closed form is {t['total_time'] * 1e3:.2f} ms, of which {t['pp_comm_exposed_time'] * 1e3:.2f} ms pipeline "
           f"transfers and {t['dp_comm_exposed_time'] * 1e3:.2f} ms DP reduction counted as exposed; the overlapped simulation takes "
           f"{overlapped * 1e3:.2f} ms, {100 * (1 - overlapped / t['total_time']):.1f}% less")

    # The GPT-3 example's timeline bands.
    example = os.path.join(ROOT, "test", "Examples", "gpt3-175B-seqsel.spec.json")
    imported = subprocess.run(["blueprint-translate", "--import-transformer-training", example], capture_output=True, text=True, check=True)
    subprocess.run(["blueprint-opt", "--pass-pipeline=builtin.module(distribute-transformer-training, plan-transformer-training)", "-o", plan],
                   input=imported.stdout, text=True, check=True)
    svg = os.path.join(work, "timeline.svg")
    subprocess.run(["blueprint-translate", "--estimate", plan, "--system", SYSTEM("a100_80g"), "--tp-net", "0", "--pp-net", "1",
                    "--dp-net", "1", "--timeline", svg], capture_output=True, text=True, check=True)
    bands = re.search(r"wrapped into (\d+) bands of ([0-9.]+) ms", open(svg).read())
    expect(f"takes {bands.group(1)} bands of {float(bands.group(2)) / 1e3:.1f} s")

    missing = [c for c in checks if c not in text]
    for c in missing:
        print(f"README does not say: {c}")
    print(f"{len(checks) - len(missing)} of {len(checks)} README figures are what their commands give")


main()
