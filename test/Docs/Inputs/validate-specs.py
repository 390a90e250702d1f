"""Validates the repository's specs against docs/spec/*.schema.json.

Usage: validate-specs.py REPO. Every JSON file with `model`, `workload` and
`mapping` under test/Inputs/specs, test/Examples, test/Execution/Inputs and
examples/llama is checked against the training or inference schema (an
inference spec has `workload.prompt_tokens`); then a few specs the importer
rejects for their shape must fail the schema too. Exit 1 on any mismatch.
"""

import copy
import glob
import json
import os
import sys

import jsonschema

repo = sys.argv[1]
schemas = {}
for kind in ("training", "inference"):
    with open(os.path.join(repo, "docs", "spec", kind + ".schema.json")) as f:
        schemas[kind] = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schemas[kind])


def errors(doc, kind):
    validator = jsonschema.Draft202012Validator(schemas[kind])
    return [e.message for e in validator.iter_errors(doc)]


counts = {"training": 0, "inference": 0}
failed = False
patterns = ["test/Inputs/specs/*.json", "test/Examples/*.json", "test/Execution/Inputs/*.json", "examples/llama/*.json"]
example = None
for pattern in patterns:
    for path in sorted(glob.glob(os.path.join(repo, pattern))):
        with open(path) as f:
            doc = json.load(f)
        if not (isinstance(doc, dict) and {"model", "workload", "mapping"} <= doc.keys()):
            continue
        kind = "inference" if "prompt_tokens" in doc["workload"] else "training"
        problems = errors(doc, kind)
        if problems:
            print("%s: does not validate as a %s spec: %s" % (path, kind, problems[0]))
            failed = True
        counts[kind] += 1
        if kind == "training" and example is None:
            example = doc
print("validated %d training and %d inference specs" % (counts["training"], counts["inference"]))

# Shapes the importer rejects.
bad = []
for mutate in (
    lambda d: d["model"].update(hiden=1),  # an unknown field
    lambda d: d["model"].pop("hidden"),  # a missing field
    lambda d: d["mapping"].update(recompute="some"),  # not a choice
    lambda d: d["model"].update(blocks=0),  # a count below 1
    lambda d: d["model"].update(blocks=2**53 + 1),  # above 2^53
):
    doc = copy.deepcopy(example)
    mutate(doc)
    bad.append(doc)
rejected = sum(1 for doc in bad if errors(doc, "training"))
print("rejected %d malformed specs" % rejected)
if rejected != len(bad):
    failed = True
sys.exit(1 if failed else 0)
