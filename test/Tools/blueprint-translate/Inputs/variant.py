#!/usr/bin/env python3
"""Print a spec derived from BASE: `section.key=JSON` sets a field,
`section.key=-` deletes it. Used to make one invalid spec per rule."""
import json
import sys

spec = json.load(open(sys.argv[1]))
for edit in sys.argv[2:]:
    path, value = edit.split("=", 1)
    *parents, key = path.split(".")
    node = spec
    for p in parents:
        node = node[p]
    if value == "-":
        del node[key]
    else:
        node[key] = json.loads(value)
json.dump(spec, sys.stdout, indent=1)
