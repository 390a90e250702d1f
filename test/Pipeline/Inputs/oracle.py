#!/usr/bin/env python3
"""Helpers for the end-to-end lit tests (oracle data is read, never copied).

  oracle.py spec   ORACLE.json CASE            print the case's spec (model, workload, mapping)
  oracle.py check  ORACLE.json CASE SUMMARY     compare SUMMARY's "block" with the case's "block"
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
    got = summary["block"]
    bad = [f"{k}: got {got.get(k)}, oracle {v}" for k, v in c["block"].items() if got.get(k) != v]
    if bad:
        sys.exit(f"{name}: " + "; ".join(bad))
    print(f"{name}: all {len(c['block'])} block fields match ({summary['layer']})")


if __name__ == "__main__":
    main()
