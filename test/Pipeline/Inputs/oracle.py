#!/usr/bin/env python3
"""Helpers for the end-to-end lit tests (oracle data is read, never copied).

  oracle.py spec   ORACLE.json CASE            print the case's spec (model, workload, mapping)
  oracle.py check  ORACLE.json CASE SUMMARY     compare SUMMARY's "block" with the case's "block"
  oracle.py check-prefill ORACLE.json CASE SUMMARY   compare SUMMARY's inference prefill with the case's "block"
  oracle.py check-genz ORACLE.json CASE SUMMARY      compare SUMMARY's matmul FLOPs per phase with GenZ's
  oracle.py check-facts ORACLE.json CASE FACTS       compare --transformer-inference-facts output with every field
  oracle.py pipeline ORACLE.json [PASS [PREFIX]]      run every training case (named PREFIX[,PREFIX...]...) through the
                                                      MLIR pipeline (import, distribute, [PASS], plan, checks, summary)
                                                      and compare "block" and "per_processor" with the case's
  oracle.py pipeline-exact ORACLE.json [PASS [PREFIX]]  the same, every field (times too) bit for bit
"""
import json
import os
import subprocess
import sys

# pipeline-exact: every field equal, not within 1e-9.
EXACT = False

PIPELINE = ("distribute-transformer-training", "{extra}", "plan-transformer-training", "check-mesh-strategy",
            "check-collective-groups", "check-conservation", "check-recompute")


FORWARD_BLOCK = ("block_fw_flops", "block_fw_mem_accessed", "baseblock_fw_tp_size", "block_fw_pp_size", "block_weight_space",
                 "block_act_working_space")


def agrees(got, want, time=False):
    """Integral oracle values exactly; a non-integral one (a share of state
    sharded over a group: Calculon sums per-layer quotients where Blueprint
    divides the block's total) and every time to a relative 1e-9."""
    if got is None:
        return False
    if EXACT:
        return got == want
    if float(want).is_integer() and not time:
        return got == want
    return abs(got - want) <= 1e-9 * abs(want)


def run_pipeline(path, extra="", only=""):
    """Every case of ORACLE.json (whose name starts with `only`) through the
    tools on PATH; one line per case."""
    prefixes = only.split(",")
    cases = [c for c in json.load(open(path))["cases"] if any(c["name"].startswith(p) for p in prefixes)]
    passes = ", ".join(p for p in (x.format(extra=extra) for x in PIPELINE) if p)
    good = 0
    for c in cases:
        spec = json.dumps({k: c[k] for k in ("model", "workload", "mapping")})
        module = subprocess.run(["blueprint-translate", "--import-transformer-training", "-"], input=spec,
                                capture_output=True, text=True)
        planned = subprocess.run(["blueprint-opt", f"--pass-pipeline=builtin.module({passes})"], input=module.stdout,
                                 capture_output=True, text=True)
        summary = subprocess.run(["blueprint-translate", "--export-work-summary"], input=planned.stdout,
                                 capture_output=True, text=True)
        if summary.returncode != 0:
            print(f"{c['name']}: pipeline failed: {(module.stderr + planned.stderr + summary.stderr).strip()}")
            continue
        got_all = json.loads(summary.stdout)
        if "timing_seconds" in c:
            # The estimate of the same plan on the case's system and tiers.
            # Beside the case file, then Calculon's files, then the recorded ones.
            test = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
            candidates = [os.path.join(os.path.dirname(path), "systems"), os.path.join(test, "oracles", "calculon", "systems"),
                          os.path.join(test, "Inputs", "calculon", "systems")]
            systems = next((d for d in candidates if os.path.exists(os.path.join(d, c["system"] + ".json"))), candidates[0])
            net = c.get("networks", {"tp": 0, "pp": 1, "dp": 1})
            estimate = subprocess.run(["blueprint-translate", "--estimate", "--system", os.path.join(systems, c["system"] + ".json"),
                                       "--tp-net", str(net["tp"]), "--pp-net", str(net["pp"]), "--dp-net", str(net["dp"]),
                                       "--allow-over-capacity", *(["--dp-overlap"] if c.get("overlap", {}).get("dp") else []),
                                       *(["--forward-only"] if c.get("training") is False else []),
                                       *[f"--{k}-offload" for k, v in c.get("offload", {}).items() if v]],
                                      input=planned.stdout, capture_output=True, text=True)
            if estimate.returncode != 0:
                print(f"{c['name']}: estimate failed: {estimate.stderr.strip()}")
                continue
            report = json.loads(estimate.stdout)
            got_all["timing_seconds"] = report["timing_seconds"]
            if c.get("training") is False:
                # Calculon's inference step: its memory is the estimate's
                # (the plan states the training step's), and of the block
                # facts only the forward ones are the training block's.
                got_all["per_processor"] = report["per_processor"]
                c = dict(c, block={k: v for k, v in c["block"].items() if k in FORWARD_BLOCK})
            if "offload" in c:
                # The first tier's requirement with offload, and the second's.
                got_all["per_processor"] = dict(report["per_processor"],
                                                proc_mem_tier2_cap_req=report["offload"]["proc_mem_tier2_cap_req"])
        bad, fields = [], 0
        # Under DP overlap the estimate's figure is the correct one: compare
        # with Calculon's composition with its recompute defect fixed.
        fixed = c.get("dp_overlap_fixed", {})
        for section in ("block", "per_processor", "timing_seconds"):
            for field, want in c.get(section, {}).items():
                if section == "timing_seconds" and field in fixed:
                    want = fixed[field]
                fields += 1
                got = got_all.get(section, {}).get(field)
                if not agrees(got, want, section == "timing_seconds"):
                    bad.append(f"{section}.{field}: got {got}, oracle {want}")
        if bad:
            print(f"{c['name']}: " + "; ".join(bad))
        else:
            good += 1
            print(f"{c['name']}: all {fields} fields match ({got_all['layer']})")
    print(f"{good} of {len(cases)} cases match")


def case(path, name):
    for c in json.load(open(path))["cases"]:
        if c["name"] == name:
            return c
    sys.exit(f"no case {name} in {path}")


def main():
    if sys.argv[1] in ("pipeline", "pipeline-exact"):
        global EXACT
        EXACT = sys.argv[1] == "pipeline-exact"
        run_pipeline(sys.argv[2], *sys.argv[3:5])
        return
    mode, path, name = sys.argv[1:4]
    c = case(path, name)
    if mode == "spec":
        json.dump({k: c[k] for k in ("model", "workload", "mapping")}, sys.stdout, indent=1)
        return
    summary = json.load(open(sys.argv[4]))
    expected = {}
    if mode == "check":
        got, expected, what = summary["block"], c["block"], summary["layer"]
    elif mode == "check-prefill":
        got, expected, what = summary["inference"]["prefill"], c["block"], summary["layer"]
    elif mode == "check-genz":
        flops = summary["inference"]["matmul_flops"]
        got, what = {}, summary["layer"]
        for phase, key in (("prefill", "prefill"), ("decode", "decode_at_final_context")):
            for field in ("per_gpu_layer_flops", "per_gpu_layer_flops_gemm", "per_gpu_layer_flops_attn_bmm"):
                expected[f"{phase}.{field}"] = c[key][field]
                got[f"{phase}.{field}"] = flops.get(phase, {}).get(field)
    elif mode == "check-facts":
        got, what = {}, "facts"
        if "block" in c:
            for field, value in c["block"].items():
                expected[f"prefill.{field}"] = value
                got[f"prefill.{field}"] = summary["prefill"].get(field)
        for phase, key in (("prefill", "prefill"), ("decode_at_final_context", "decode_at_final_context")):
            for field, value in c.get(key, {}).items():
                expected[f"{phase}.{field}"] = value
                got[f"{phase}.{field}"] = (summary.get(phase) or {}).get(field)
    else:
        sys.exit(f"unknown mode {mode}")
    bad = [f"{k}: got {got.get(k)}, oracle {v}" for k, v in expected.items() if got.get(k) != v]
    if bad:
        sys.exit(f"{name}: " + "; ".join(bad))
    print(f"{name}: all {len(expected)} fields match ({what})")


if __name__ == "__main__":
    main()
