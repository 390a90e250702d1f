#!/usr/bin/env python3
"""Checks the examples of a dialect document made by `mlir-tblgen
-gen-dialect-doc`: every op section (### `<dialect>.<op>`) has an ```mlir
example that uses the op in the custom form (`<dialect>.<op> ...`), and no
example uses the generic form (`"<dialect>.<op>"(...)`). Prints one line per
op and exits 1 on the first problem."""
import re
import sys

text = open(sys.argv[1]).read()
dialect = re.search(r"^# '(\w+)' Dialect", text, re.M).group(1)
sections = re.split(r"^### ", text, flags=re.M)[1:]
ops = 0
for section in sections:
    m = re.match(r"`(" + dialect + r"\.\w+)`", section)
    if not m:
        continue  # types, attributes, enums
    op = m.group(1)
    examples = re.findall(r"```mlir\n(.*?)```", section, re.S)
    if not examples:
        sys.exit(f"{op}: no ```mlir example")
    for example in examples:
        generic = re.search(r'"' + dialect + r'\.\w+"\s*\(', example)
        if generic:
            sys.exit(f"{op}: example in the generic form: {generic.group(0)}")
    if not any(re.search(r"(^|[\s=])" + re.escape(op) + r"\s", e, re.M) for e in examples):
        sys.exit(f"{op}: no example uses '{op}' in the custom form")
    ops += 1
    print(f"{op}: custom-form example")
print(f"{dialect}: {ops} ops, every one with a custom-form example")
