#!/usr/bin/env python3
"""Helpers for the end-to-end lit tests (oracle data is read, never copied).

  oracle.py spec   ORACLE.json CASE            print the case's spec (model, workload, mapping)
  oracle.py check  ORACLE.json CASE SUMMARY     compare SUMMARY's "block" with the case's "block"
  oracle.py check-prefill ORACLE.json CASE SUMMARY   compare SUMMARY's inference prefill with the case's "block"
  oracle.py check-genz ORACLE.json CASE SUMMARY      compare SUMMARY's matmul FLOPs per phase with GenZ's
  oracle.py check-facts ORACLE.json CASE FACTS       compare --transformer-inference-facts output with every field
"""
import json
import sys


def case(path, name):
    for c in json.load(open(path))["cases"]:
        if c["name"] == name:
            return c
    sys.exit(f"no case {name} in {path}")


def main():
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
