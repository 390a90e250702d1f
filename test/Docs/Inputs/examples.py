#!/usr/bin/env python3
"""Checks the examples of a dialect document made by `mlir-tblgen
-gen-dialect-doc`: every op section (### `<dialect>.<op>`) has an ```mlir
example that uses the op in the custom form (`<dialect>.<op> ...`), and no
example uses the generic form (`"<dialect>.<op>"(...)`). With `--parse TOOL`
(blueprint-opt), every example must also parse. Prints one line per op and
exits 1 on the first problem.

usage: examples.py [--parse TOOL] DOC.md

An example is a fragment: it uses values it does not define (`%x`). They
are defined before it by a placeholder op (`"example.free"`) of the type the
example uses them with, which the parser names when a placeholder defined
after the example disagrees ("previously used here with type ..."). Only
parse errors count: the verifiers may reject a fragment out of context (no
header, no mesh), and their messages name the op (`'<dialect>.<op>' op`)."""
import re
import subprocess
import sys

args = sys.argv[1:]
tool = None
if args[:1] == ["--parse"]:
    if len(args) < 2:
        sys.exit(__doc__)
    tool, args = args[1], args[2:]
if len(args) != 1:
    sys.exit(__doc__)

VALUE = r"%[\w.$-]+"


def free_values(example):
    """Values the example uses before or without defining them, in order."""
    defined = set()
    for lhs in re.findall(r"^\s*((?:" + VALUE + r"(?::\d+)?\s*,\s*)*" + VALUE + r"(?::\d+)?)\s*=", example, re.M):
        defined |= {re.sub(r":\d+$", "", v.strip()) for v in lhs.split(",")}
    for block_args in re.findall(r"\^\w+\(([^)]*)\)", example):
        defined |= {a.split(":")[0].strip() for a in block_args.split(",")}
    used = []
    for v in re.findall(VALUE, example):
        v = re.sub(r"#\d+$", "", v)
        if v not in defined and v not in used:
            used.append(v)
    return used


def run(text):
    return subprocess.run([tool, "--allow-unregistered-dialect", "-"], input=text, capture_output=True,
                          text=True).stderr


def parse_error(example):
    """The first parse error of `example`, or None when it parses."""
    free = free_values(example)
    types = {v: "i1" for v in free}
    # Learn one type per round: placeholders after the example are forward
    # references, and the parser reports the type each was used with.
    for _ in range(len(free) + 1):
        defs = "".join(f'  {v} = "example.free"() : () -> {types[v]}\n' for v in free)
        stderr = run("func.func @example() {\n" + example + "\n" + defs + "  return\n}\n")
        m = re.search(r"definition of SSA value '(%[^#']+)#0' has type .*\n.*previously used here with type '(.+)'",
                      stderr)
        if not (m and m.group(1) in types and types[m.group(1)] != m.group(2)):
            break
        types[m.group(1)] = m.group(2)
    defs = "".join(f'  {v} = "example.free"() : () -> {types[v]}\n' for v in free)
    stderr = run("func.func @example() {\n" + defs + example + "\n  return\n}\n")
    for line in stderr.splitlines():
        if ": error: " in line and not re.search(r": error: '[\w.]+' op ", line):
            return line
    return None


text = open(args[0]).read()
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
        if tool:
            error = parse_error(example)
            if error:
                sys.exit(f"{op}: example does not parse: {error}\n{example}")
    if not any(re.search(r"(^|[\s=])" + re.escape(op) + r"\s", e, re.M) for e in examples):
        sys.exit(f"{op}: no example uses '{op}' in the custom form")
    ops += 1
    print(f"{op}: custom-form example")
what = "custom-form example that parses" if tool else "custom-form example"
print(f"{dialect}: {ops} ops, every one with a {what}")
