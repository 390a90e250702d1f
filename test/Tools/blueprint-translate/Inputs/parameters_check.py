#!/usr/bin/env python3
"""blueprint-translate --parameters on each of Calculon's model files equals
Calculon's recorded count (parameters.json), exactly.

usage: parameters_check.py ORACLE_DIR   (test/oracles/calculon)
"""
import json
import os
import subprocess
import sys


def main():
    oracle = sys.argv[1]
    want = json.load(open(os.path.join(oracle, "parameters.json")))["parameters"]
    bad = 0
    for name, count in sorted(want.items()):
        path = os.path.join(oracle, "models", name + ".json")
        got = json.loads(subprocess.run(["blueprint-translate", "--parameters", path], check=True, capture_output=True, text=True).stdout)
        if got["calculon"] != count:
            print(f"parameters: {name}: Calculon counts {count}, blueprint-translate {got['calculon']}")
            bad += 1
    if bad:
        sys.exit(1)
    print(f"parameters: {len(want)} models match Calculon")


if __name__ == "__main__":
    main()
