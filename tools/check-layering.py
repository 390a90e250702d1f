#!/usr/bin/env python3
"""Checks that `src/` stays layered the way README's "Layout" section says.

Reads every Rust file under `src/`, resolves each `crate::`, `super::` and
`self::` path (in `use` trees, braces expanded, and inline) to the module it
names, and checks:

1. no import cycles between modules in the library's own code (a
   module's references to its own ancestors or descendants are the
   folder's facade, not an import, so they are left out, and so are
   `#[cfg(test)]` items and test modules, which no other code imports);
2. the folder-level import graph follows the layers:
       tools -> conversion | transforms -> dialect -> ir
       analysis, runtime: the bottom (nothing above them)
   i.e. a folder may import only folders of a lower rank (RANK below);
   tests included (a unit test reaches no higher than its module may);
3. `analysis/` and `runtime/` use neither `melior` nor `mlir_sys`;
4. `src/` holds only `lib.rs` and `error.rs` besides the layer folders.

Usage: check-layering.py [SRC_DIR] [--graph]   (exit 1 with one line per
violation; --graph prints the module edges.)
"""

import os
import re
import sys
from collections import defaultdict

# A folder may import folders of strictly lower rank, and itself.
RANK = {
    "analysis": 0,
    "runtime": 0,
    "ir": 1,
    "dialect": 2,
    "transforms": 3,
    "conversion": 3,
    "tools": 4,
}
# The crate root's own files: what every layer may use.
ROOT_FILES = {"lib.rs", "error.rs"}
NO_MLIR = ("analysis", "runtime")


def module_files(src):
    """Maps module paths (tuples of names) to files."""
    modules = {}
    for dirpath, _, files in os.walk(src):
        for name in files:
            if not name.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, name), src)
            parts = rel[:-3].split(os.sep)
            if parts[-1] in ("mod", "lib"):
                parts = parts[:-1]
            modules[tuple(parts)] = os.path.join(dirpath, name)
    return modules


def strip_comments_and_strings(text):
    """Removes comments (line, block, doc) and string/char literal bodies."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'r(#*)"', text[i:])
            end = text.find('"' + m.group(1), i + len(m.group(0)))
            i = n if end < 0 else end + 1 + len(m.group(1))
            out.append('""')
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append('""')
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i + 4]):
            m = re.match(r"'(\\.|[^\\'])'", text[i:])
            i += len(m.group(0))
            out.append("' '")
        else:
            out.append(c)
            i += 1
    return "".join(out)


def expand_use_tree(tree):
    """`a::{b, c::{d, e}}` -> ['a::b', 'a::c::d', 'a::c::e']."""
    tree = tree.strip()
    depth = 0
    for k, ch in enumerate(tree):
        if ch == "{":
            if depth == 0:
                prefix, inner = tree[:k], tree[k + 1:tree.rindex("}")]
                parts, depth2, start = [], 0, 0
                for j, ch2 in enumerate(inner):
                    if ch2 == "{":
                        depth2 += 1
                    elif ch2 == "}":
                        depth2 -= 1
                    elif ch2 == "," and depth2 == 0:
                        parts.append(inner[start:j])
                        start = j + 1
                parts.append(inner[start:])
                result = []
                for part in parts:
                    if part.strip():
                        result += [prefix + p for p in expand_use_tree(part)]
                return result
            depth += 1
    return [re.sub(r"\s+as\s+\w+$", "", tree)]


CFG_TEST = re.compile(r"#\[cfg\(test\)\]\s*")


def split_tests(code):
    """(code without `#[cfg(test)]` items, names of `#[cfg(test)] mod x;`)."""
    out, test_mods, i = [], [], 0
    for m in CFG_TEST.finditer(code):
        if m.start() < i:
            continue
        out.append(code[i:m.start()])
        j = m.end()
        decl = re.match(r"(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", code[j:])
        if decl:
            test_mods.append(decl.group(1))
            i = j + decl.end()
            continue
        brace, semi = code.find("{", j), code.find(";", j)
        if brace < 0 or (0 <= semi < brace):
            i = (semi + 1) if semi >= 0 else len(code)
            continue
        depth, k = 0, brace
        while k < len(code):
            if code[k] == "{":
                depth += 1
            elif code[k] == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        i = k + 1
    out.append(code[i:])
    return "".join(out), test_mods


PATH = re.compile(r"\b(crate|super|self)((?:\s*::\s*(?:\w+|\*))+)")
USE = re.compile(r"\buse\s+((?:crate|super|self)\s*::[^;]*);", re.S)


def referenced_paths(code):
    paths = []
    for m in USE.finditer(code):
        paths += expand_use_tree(m.group(1))
    rest = USE.sub(" ", code)
    for m in PATH.finditer(rest):
        paths.append(m.group(1) + m.group(2))
    return [re.sub(r"\s+", "", p) for p in paths]


def resolve(path, here, modules):
    """The module (longest existing prefix) a path names, from module `here`."""
    segs = [s for s in path.split("::") if s]
    if not segs:
        return None
    base = list(here)
    head = segs.pop(0)
    if head == "crate":
        base = []
    elif head == "super":
        base = base[:-1]
        while segs and segs[0] == "super":
            segs.pop(0)
            base = base[:-1]
    elif head != "self":
        return None
    best = tuple(base)
    cur = list(base)
    for s in segs:
        cur.append(s)
        if tuple(cur) in modules:
            best = tuple(cur)
        else:
            break
    return best


def related(a, b):
    return a[: len(b)] == b or b[: len(a)] == a


def cycles(edges, nodes):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    src = args[0] if args else os.path.relpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
    modules = module_files(src)
    problems = []
    edges = defaultdict(set)  # everything, tests included
    library = defaultdict(set)  # without test code: for cycles
    test_modules = set()
    name = lambda m: "::".join(m) or "crate"
    for mod, path in sorted(modules.items()):
        with open(path, encoding="utf-8") as f:
            _, tests = split_tests(strip_comments_and_strings(f.read()))
        test_modules.update(mod + (t,) for t in tests)
    for mod, path in sorted(modules.items()):
        with open(path, encoding="utf-8") as f:
            raw = f.read()
        code = strip_comments_and_strings(raw)
        top = mod[0] if mod else None
        if top in NO_MLIR and re.search(r"\b(melior|mlir_sys)\b", code):
            problems.append(f"{path}: {top}/ must not use melior or mlir_sys")
        in_tests = any(mod[: len(t)] == t for t in test_modules)
        non_test, _ = split_tests(code)
        for p in referenced_paths(non_test):
            target = resolve(p, mod, modules)
            if target is not None and not related(target, mod) and not in_tests:
                library[mod].add(target)
        for p in referenced_paths(code):
            target = resolve(p, mod, modules)
            if target is None or related(target, mod):
                continue
            edges[mod].add(target)
            # Folder layering (the crate root is below everything).
            if mod and target and top in RANK and target[0] in RANK:
                if target[0] != top and RANK[target[0]] >= RANK[top]:
                    problems.append(f"{path}: {top}/ imports {name(target)} ({target[0]}/ is not below {top}/)")
    for comp in cycles(library, modules.keys()):
        problems.append("import cycle: " + " <-> ".join(name(m) for m in comp))
    for entry in sorted(os.listdir(src)):
        full = os.path.join(src, entry)
        if os.path.isdir(full) and entry not in RANK:
            problems.append(f"{full}: not a layer folder ({', '.join(sorted(RANK))})")
        elif os.path.isfile(full) and entry not in ROOT_FILES:
            problems.append(f"{full}: src/ holds only {' and '.join(sorted(ROOT_FILES))} besides the layer folders")
    if "--graph" in argv:
        for mod in sorted(edges):
            for t in sorted(edges[mod]):
                print(f"{name(mod)} -> {name(t)}")
    for p in problems:
        print(p)
    if problems:
        print(f"check-layering: {len(problems)} problem(s)")
        return 1
    print(f"check-layering: {len(modules)} modules, {sum(len(e) for e in edges.values())} imports, layered")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
