#!/usr/bin/env python3
"""Runs `blueprint-translate --estimate --calculon MODEL EXECUTION SYSTEM` on every
run of ORACLES/llm/index.json (Calculon's own `calculon llm` outputs, see
test/oracles/calculon/README.md) and compares the report with Calculon's
statistics: the ten times, the seven memory fields and the sample rate,
to a relative 1e-9 (integral memory exactly). Under DP overlap with
recompute Calculon's figure is the defective one: it is compared with the
report's `dp_overlap_calculon_total_time`.

  calculon_triples.py ORACLES INPUTS [FORMAT]

FORMAT `calculon` runs with `--format calculon` and compares every one of
Calculon's 96 statistics, by name and in its order.
"""
import json
import os
import subprocess
import sys

TIME = ["fw_time", "bw_time", "optim_step_time", "recompute_time", "recomm_exposed_time", "bubble_time",
        "tp_comm_exposed_time", "pp_comm_exposed_time", "dp_comm_exposed_time", "total_time"]
MEMORY = ["weight_space", "act_space", "act_checkpoint_size", "act_grad_space", "weight_grad_space", "optimizer_space",
          "proc_mem_tier1_cap_req"]


def agrees(got, want):
    if got is None:
        return False
    if want == 0:
        return got == 0
    return abs(got - want) <= 1e-9 * abs(want)


def system_file(oracles, inputs, name):
    local = os.path.join(inputs, "calculon", "systems", name + ".json")
    return local if os.path.exists(local) else os.path.join(oracles, "calculon", "systems", name + ".json")


def check_all(run, want, text):
    """`--format calculon`: every statistic, by name and in Calculon's order."""
    got = json.loads(text, object_pairs_hook=lambda pairs: pairs)
    names = [k for k, _ in got]
    if names != list(want.keys()):
        return [f"fields {names} differ from Calculon's {list(want.keys())}"]
    bad = []
    for field, value in got:
        w = want[field]
        ok = (value is None and w is None) or (value is not None and w is not None and agrees(value, w))
        if not ok:
            bad.append(f"{field}: {value}, Calculon {w}")
    return bad


def main(oracles, inputs, fmt="blueprint"):
    index = json.load(open(os.path.join(oracles, "calculon", "llm", "index.json")))
    good = 0
    for run in index["runs"]:
        want = json.load(open(os.path.join(oracles, "calculon", "llm", run["name"] + ".json")))
        args = ["blueprint-translate", "--estimate", "--allow-over-capacity", "--calculon",
                os.path.join(oracles, "calculon", "models", run["model"] + ".json"),
                os.path.join(inputs, "calculon", "executions", run["name"] + ".json"),
                system_file(oracles, inputs, run["system"])]
        if fmt == "calculon":
            args += ["--format", "calculon"]
        done = subprocess.run(args, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"{run['name']}: failed: {done.stderr.strip()}")
            continue
        if fmt == "calculon":
            bad = check_all(run, want, done.stdout)
            if bad:
                print(f"{run['name']}: " + "; ".join(bad))
            else:
                good += 1
                print(f"{run['name']}: all {len(want)} statistics match")
            continue
        got = json.loads(done.stdout)
        calculon_total = got.get("dp_overlap_calculon_total_time")
        bad = []
        for field in TIME:
            value = got["timing_seconds"][field]
            if calculon_total is not None and field == "total_time":
                value = calculon_total
            if calculon_total is not None and field == "dp_comm_exposed_time":
                value = want[field]  # Blueprint's is the corrected figure (see the notes)
            if not agrees(value, want[field]):
                bad.append(f"{field}: {value}, Calculon {want[field]}")
        for field in MEMORY:
            if not agrees(got["per_processor"][field], want[field]):
                bad.append(f"{field}: {got['per_processor'][field]}, Calculon {want[field]}")
        if calculon_total is None and not agrees(got["sample_rate"], want["sample_rate"]):
            bad.append(f"sample_rate: {got['sample_rate']}, Calculon {want['sample_rate']}")
        training = "training" if got["training"] else "inference"
        if bad:
            print(f"{run['name']}: " + "; ".join(bad))
        else:
            good += 1
            print(f"{run['name']}: {training}: all {len(TIME) + len(MEMORY) + 1} fields match")
    print(f"{good} of {len(index['runs'])} runs match")


if __name__ == "__main__":
    main(*sys.argv[1:4])
