#!/usr/bin/env python3
"""Removes the ModelIR op with id ID (one result) from a module (stdin to
stdout); its uses read its first operand instead.

usage: drop-model-op.py ID < in.mlir > out.mlir
"""
import re
import sys

wanted = sys.argv[1]
lines = sys.stdin.read().split("\n")
for i, line in enumerate(lines):
    m = re.match(r'\s*(%[\w.]+) = model\.\w+ "' + re.escape(wanted) + r'"\((%[\w.]+)', line)
    if m:
        result, source = m.groups()
        del lines[i]
        use = re.compile(re.escape(result) + r"(?![\w.])")
        sys.stdout.write(use.sub(source, "\n".join(lines)))
        sys.exit(0)
sys.exit(f"drop: no op with id '{wanted}'")
