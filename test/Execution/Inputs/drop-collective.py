#!/usr/bin/env python3
"""Removes the collective with id ID from a derived program (stdin to
stdout): its uses read its input instead — the classic tensor-parallel bug
of a missing all-reduce, for tests that show the run catches it.

usage: drop-collective.py ID < dist.mlir > edited.mlir
"""
import re
import sys


def main():
    wanted = sys.argv[1]
    text = sys.stdin.read()
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if f'id = "{wanted}"' not in line:
            continue
        m = re.match(r"\s*(%[\w.]+) = dist\.\w+ (%[\w.]+)", line)
        if not m:
            sys.exit(f"drop-collective: '{wanted}' is not a collective")
        result, source = m.groups()
        del lines[i]
        use = re.compile(re.escape(result) + r"(?![\w.])")
        sys.stdout.write(use.sub(source, "\n".join(lines)))
        return
    sys.exit(f"drop-collective: no op with id '{wanted}'")


if __name__ == "__main__":
    main()
