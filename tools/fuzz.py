#!/usr/bin/env python3
"""Blueprint's fuzz harness: seeded mutants of every test input through every
pipeline and translation mode, looking for crashes.

The full campaign (about 7000 cases):

    python3 tools/fuzz.py --mlir-cases 5000 --spec-cases 2000

(those are also the defaults). A quick run: `python3 tools/fuzz.py --cases 300`.
The lit test test/Fuzz/smoke.test runs a small seeded batch under `cargo test`.

What is fuzzed
  MLIR cases (--mlir-cases): half are random mutants (truncation, byte flips,
    invalid UTF-8, token insertion and deletion, op names swapped between
    the model/dist/plan dialects, attributes deleted, duplicated, renamed or
    set to negative, zero, huge or wrong-kind values, tensor shapes changed,
    lines deleted, duplicated or swapped, deep nesting) of every
    test/**/*.mlir file and of generated valid IR, walking the product
    "file x pipeline" in a seeded order; the other half are semantic mutants
    of valid IR that change exactly one value (an attribute value, one
    integer of an array, one tensor dimension, a string, a symbol, a bool)
    and run through a pipeline the unmutated IR passes, so the deep passes
    and checks see them. Valid IR: the chunks of the test files that parse,
    plus `blueprint-translate --import-transformer-*` of every spec in
    test/Inputs/specs and test/Examples, and that run through the
    decomposition and distribute+plan pipelines (made once at startup).
  Pipelines: a fixed list (FIXED_PIPELINES below), every blueprint-opt
    invocation in the RUN lines of test/**/*.mlir and test/**/*.test and in
    the code blocks of README.md (pass flags and --pass-pipeline strings), each pass of `blueprint-opt --help`
    (section BLUEPRINT PASSES) on its own, and the blueprint-translate modes
    of `--help` that read MLIR (--export-work-summary). Extracted pipelines
    that the tool refuses on its command line are dropped.
  Spec cases (--spec-cases): every spec JSON (test/Inputs/specs/*.json,
    test/Examples/*.spec.json, test/Inputs/calculon/recorded-cases.json and
    the cases of test/oracles/calculon/{seqsel-table5,fullmodel-random}.json
    and test/oracles/inference/*.json) mutated at the JSON level (field
    deleted, set to 0, -1, 2^31, 2^53, 2^53+1, 2^63, 2^64, 1e300, 1.5, "text",
    null, [], {}, true, raw 1e400/NaN/huge literals; numbers nudged; enum
    strings changed; unknown or foreign fields added; sections swapped
    between specs; nesting deepened) or at the byte level, through every
    blueprint-translate mode that reads a spec (from `--help`) and through
    each import piped into blueprint-opt with the distribute+plan(+checks)
    pipelines that accept the unmutated import.

A crash is: an exit code other than 0 or 1, death by a signal, "panicked",
"internal error:", an LLVM assertion, "LLVM ERROR", "Stack dump",
"PLEASE submit a bug report" or a stack overflow on stderr, more than
--timeout seconds (kind "timeout"), or exceeding the address-space limit
(--mem-limit-mib, set with RLIMIT_AS on this process so every child inherits
it; kind "oom"). Each crashing input is saved in --crash-dir (default
target/fuzz-crashes) as seed<S>-<case>.{mlir,json} with a .cmd file holding
the exact command and its stderr; <crash-dir>/summary-seed<S>.txt lists the
distinct crashes (deduplicated by kind + the first stderr line or signal).

Output: progress on stderr every 100 cases; on stdout one line per distinct
crash ("CRASH ...") and, as the very last line, "N cases, M crashes".
Exit code 0 when there was no crash, 1 otherwise, 2 on a usage error.

Options: --seed S (default 0), --mlir-cases N, --spec-cases N, --cases N
(splits N 5:2 between the two), --jobs J (default 1), --bin-dir DIR (default:
blueprint-opt and blueprint-translate on PATH), --crash-dir DIR,
--timeout SECONDS (20), --mem-limit-mib MIB (4096), --case ID (run only that
case, e.g. m123 or s45; repeatable), --list (print the pipelines, modes and
sources and exit), --log FILE (one JSON line per case: what was mutated, the
command, exit codes and the first stderr line). Cases are deterministic for a given seed and tool build.
"""
import argparse
import concurrent.futures
import copy
import json
import os
import random
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ORACLES = ROOT / "test" / "oracles"

TRAINING_CHECKS = ("builtin.module(distribute-transformer-training, plan-transformer-training, "
                   "check-mesh-strategy, check-collective-groups, check-conservation, check-recompute)")
FIXED_PIPELINES = [
    [],
    ["--blueprint-verify"],
    ["--canonicalize"],
    ["--cse"],
    ["--pass-pipeline=" + TRAINING_CHECKS],
    ["--pass-pipeline=builtin.module(model-decompose-transformer, distribute-transformer-training, "
     "plan-transformer-training, check-conservation)"],
    ["--pass-pipeline=builtin.module(distribute-transformer-inference, plan-transformer-inference, "
     "check-conservation)"],
    ["--pass-pipeline=builtin.module(dist-async, dist-sink-waits, dist-canonicalize, lower-dist-to-runtime)"],
    ["--split-input-file", "--verify-diagnostics"],
    ["--mlir-print-op-generic"],
]
# Options of RUN-line invocations that do not run the input through anything.
DROP_OPTIONS = {"--print-irdl", "--version", "--help", "-h"}

DEFAULT_MLIR_CASES = 5000
DEFAULT_SPEC_CASES = 2000

I64_MAX = 2**63 - 1

FIXED_TOKENS = [
    "%0", "}", "{", "(", ")", "->", ":", "@x", '"dist.wait"', "array<i64: -1>", "9223372036854775807",
    ",", "=", "<", ">", "[", "]", "?", "%arg0", "^bb0:", "i64", "tensor<?xf32>", "!dist.token", "unit",
    "dense<1>", "-1", "0", '"', "// -----", "module {", "func.func @f() {", "return", "loc(unknown)",
    "\n", "-", "*", "#", "!", "^", "...", '"model.matmul"() : () -> ()', "18446744073709551616",
    "-9223372036854775808", "1e308", "0x", "tensor<*xf16>", "memref<4xf32>", "@", "%",
]
ATTR_VALUES = [
    "-1 : i64", "0 : i64", "1 : i64", "9223372036854775807 : i64", "4611686018427387904 : i64",
    "-9223372036854775808 : i64", "9223372036854775808 : i64", "18446744073709551615 : i64",
    "2147483648 : i64", "4294967296 : i64", "9007199254740993 : i64", "1.0e308", "-1.0e308",
    "1.0e308 : f64", "0.0", "1.5 : f32", "-1", "0", "9223372036854775807", '"text"', '""', '"-1"',
    "42 : i64", '"42"', "[]", "[1, 2]", '["a", "a"]', "[@x]", "array<i64>", "array<i64: -1>",
    "array<i64: 0>", "array<i64: 9223372036854775807>", "array<i64: 0, 0>", "array<i32: 1>", "@x",
    "@nosuch", "{}", "{a = 1}", "true", "false", "unit", "dense<1> : tensor<2xi64>", "i64",
    "tensor<4xf32>", "1 : i1", "1 : i8", "255 : ui8", "1 : index", "affine_map<(d0) -> (d0)>",
    '"sha256:' + "0" * 64 + '"', '"\\ff"', "[[[[]]]]",
]
DIM_VALUES = ["0", "1", "2", "3", "7", "?", "9223372036854775807", "4611686018427387904", "2147483648",
              "4294967296", "65536", "-1"]
ELEMENT_TYPES = ["f16", "f32", "f64", "bf16", "i1", "i8", "i32", "i64", "index", "complex<f32>",
                 "!dist.token", "tensor<2xf16>", "none"]
BAD_UTF8 = ["\xff", "\xfe", "\xc3", "\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc0\xaf", "\xe2\x82",
            "\x00", "\xef\xbf\xbf"]

JSON_VALUES = [0, -1, 2**31, 2**53, 2**53 + 1, 2**63, 2**64, 1e300, 1.5, "text", None, [], {}, True,
               False, 1, 2, 3, 2**31 - 1, 2**32, I64_MAX, -2**63, -2**63 - 1, 0.0, -0.0, "", -2**53,
               2**24, 2**24 + 1, 2**40, 1e-300, -1.5]
JSON_RAW = ["1e400", "-1e400", "1e-400", "NaN", "Infinity", "-Infinity", "-0", "1E2", "2e1", "1.0",
            "123456789012345678901234567890", "-123456789012345678901234567890", "9007199254740993",
            "18446744073709551616", "-9223372036854775809", "01", "+1", "0x10", ".5", "1.", "\"\\ud800\"",
            "\"\\u0000\"", "\"\xff\""]
JSON_KEYS = ["unknown", "x", "Hidden", "hidden ", "", "model", "mapping", "workload", "name", "__proto__",
             "\xff", "kv_heads", "batch", "prompt_tokens", "phase", "seq_len", "global_batch", "tp"]
JSON_TOKENS = ["{", "}", "[", "]", ",", ":", '"', "null", "1e999", "-", "\\", "\"\\u", "true", "0",
               "\n", "\x00", "{\"a\":", "[[[[[[", "]]]]"]

INT_RE = re.compile(r"(?<![\w%#@$.^!-])-?\d+(?![\w.])")
FLOAT_RE = re.compile(r"(?<![\w%#@$.^!])-?\d+\.\d+(?:[eE][+-]?\d+)?(?![\w.])")
STRING_RE = re.compile(r'"(?:[^"\\\n]|\\.)*"')
BOOL_RE = re.compile(r"\b(?:true|false)\b")
SYMBOL_RE = re.compile(r"(?<![\w.])@[\w$.-]+")
OPNAME_RE = re.compile(r"\b(model|dist|plan)\.([a-z_][a-z0-9_]*)\b")
ATTR_KEY_RE = re.compile(r'(?<![\w%#@$.!^"-])([A-Za-z_][\w.$-]*)\s*=(?!=)\s*')
SHAPED_RE = re.compile(r"\b(tensor|memref|vector)<")
DIMS_RE = re.compile(r"((?:(?:\d+|\?)x)*)(.*)", re.S)
ARRAY_RE = re.compile(r"array<(\w+)(?::\s*([^>]*))?>")
TOKEN_RE = re.compile(r'"(?:[^"\\\n]|\\.)*"|[%@#!^][\w$.-]+|[A-Za-z_][\w$.]*|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?'
                      r"|->|::|[{}()\[\]<>:,=?*+-]")
SPLIT_RE = re.compile(r"^// -----\s*$", re.M)


# ---------------------------------------------------------------- running


def shell_join(argv):
    return " ".join(shlex.quote(str(a)) for a in argv)


class Runner:
    """Runs one command with the timeout; the memory limit is inherited."""

    def __init__(self, timeout):
        self.timeout = timeout

    def run(self, argv, stdin_bytes=None, capture_stdout=False):
        try:
            p = subprocess.run(
                [str(a) for a in argv],
                input=stdin_bytes,
                stdin=None if stdin_bytes is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE if capture_stdout else subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                timeout=self.timeout,
            )
            return p.returncode, p.stdout or b"", p.stderr or b"", False
        except subprocess.TimeoutExpired as e:
            return None, e.stdout or b"", e.stderr or b"", True


OOM_MARKERS = ("memory allocation of", "std::bad_alloc", "out of memory", "Cannot allocate memory",
               "failed to allocate", "Out of memory")


def classify(rc, stderr, timed_out):
    """Returns the crash kind, or None when the run is a clean success or error."""
    err = stderr.decode("utf-8", "replace")
    if timed_out:
        return "timeout"
    died = rc is None or rc not in (0, 1)
    if died and any(m in err for m in OOM_MARKERS):
        return "oom"
    if "has overflowed its stack" in err or "stack overflow" in err:
        return "stack-overflow"
    if "panicked" in err:
        return "panic"
    if re.search(r"Assertion .*failed", err) or (died and "Assertion" in err):
        return "assertion"
    if "LLVM ERROR" in err:
        return "llvm-error"
    if "Stack dump" in err or "PLEASE submit a bug report" in err:
        return "llvm-crash"
    if "internal error:" in err:
        return "internal-error"
    if rc is not None and rc < 0:
        try:
            return "signal-" + signal.Signals(-rc).name
        except ValueError:
            return f"signal-{-rc}"
    if died:
        return f"exit-{rc}"
    return None


def signature_line(kind, stderr, tmpdir):
    """The line crashes of one kind are deduplicated by."""
    err = stderr.decode("utf-8", "replace")
    lines = [l.strip() for l in err.splitlines() if l.strip()]
    key = None
    for pattern in (r"panicked at", r"Assertion .*failed", r"LLVM ERROR", r"has overflowed its stack",
                    r"memory allocation of", r"internal error:"):
        for l in lines:
            if re.search(pattern, l):
                key = l
                break
        if key:
            break
    if key is None:
        key = lines[0] if lines else ""
    key = key.replace(str(tmpdir), "<tmp>")
    key = re.sub(r"thread '([^']*)' \(\d+\)", r"thread '\1'", key)  # Rust prints the thread id
    key = re.sub(r"<tmp>/(?:case|orig)-[\w.-]+?\.(?:mlir|json)", "<input>", key)
    key = re.sub(r"<input>:\d+:\d+", "<input>:L:C", key)
    if "panicked at" not in key:
        key = re.sub(r"\d{3,}", "N", key)
    return key[:300]


# ---------------------------------------------------------------- tools


def parse_help(text):
    """Sections of a --help text: {"OPTIONS": [(flag, rest), ...], ...}."""
    sections, current = {}, None
    for line in text.splitlines():
        m = re.match(r"^([A-Z][A-Z ]+):\s*$", line)
        if m:
            current = m.group(1)
            sections[current] = []
            continue
        m = re.match(r"^\s+(-{1,2}[\w-]+)(.*)$", line)
        if m and current:
            sections[current].append((m.group(1), m.group(2).strip()))
    return sections


class Tools:
    def __init__(self, bin_dir, runner):
        self.runner = runner
        self.opt = self._find("blueprint-opt", bin_dir)
        self.translate = self._find("blueprint-translate", bin_dir)
        opt_help = self._help(self.opt)
        tr_help = self._help(self.translate)
        self.passes = [f[2:] for f, _ in opt_help.get("BLUEPRINT PASSES", []) if f.startswith("--")]
        self.opt_options = {f for f, _ in opt_help.get("OPTIONS", [])}
        self.modes = []  # (flag, argument description)
        for flag, rest in tr_help.get("MODES", []):
            self.modes.append((flag, rest.split()[0] if rest.split() else ""))
        self.op_names, self.enum_strings, self.attr_names = self._irdl()

    @staticmethod
    def _find(name, bin_dir):
        if bin_dir:
            path = Path(bin_dir) / name
            if not (path.is_file() and os.access(path, os.X_OK)):
                sys.exit(f"fuzz.py: no executable {path}")
            return path.resolve()
        found = shutil.which(name)
        if not found:
            sys.exit(f"fuzz.py: {name} is not on PATH (use --bin-dir)")
        return Path(found).resolve()

    def _help(self, tool):
        p = subprocess.run([str(tool), "--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        return parse_help((p.stdout + p.stderr).decode("utf-8", "replace"))

    def _irdl(self):
        p = subprocess.run([str(self.opt), "--print-irdl"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           timeout=60)
        text = p.stdout.decode("utf-8", "replace")
        ops, dialect = [], None
        for line in text.splitlines():
            m = re.match(r"\s*irdl\.dialect @(\w+)", line)
            if m:
                dialect = m.group(1)
            m = re.match(r"\s*irdl\.operation @(\w+)", line)
            if m and dialect:
                ops.append(f"{dialect}.{m.group(1)}")
        enums = sorted(set(re.findall(r'irdl\.is "([^"\\]*)"', text)))
        attrs = sorted(set(re.findall(r'"(\w+)" = %\d+', text)))
        return sorted(set(ops)), enums, attrs

    def spec_modes(self):
        return [f for f, arg in self.modes if "json" in arg.lower() or "spec" in arg.lower()]

    def mlir_modes(self):
        return [f for f, arg in self.modes if "mlir" in arg.lower() and f not in self.spec_modes()]


# ---------------------------------------------------------------- pipelines


class Pipe:
    def __init__(self, tool, args):
        self.tool = tool  # "opt" or "translate"
        self.args = list(args)
        self.origin = set()  # test files whose RUN lines use it

    @property
    def key(self):
        return (self.tool, tuple(self.args))

    def label(self):
        return ("blueprint-opt " if self.tool == "opt" else "blueprint-translate ") + shell_join(self.args)


def run_lines(path):
    out, cur = [], ""
    for line in path.read_text(errors="replace").splitlines():
        m = re.search(r"\bRUN:(.*)$", line)
        if not m:
            continue
        part = m.group(1).strip()
        if part.endswith("\\"):
            cur += part[:-1] + " "
            continue
        out.append(cur + part)
        cur = ""
    if cur:
        out.append(cur)
    return out


def readme_commands():
    """The command lines in README.md's code blocks (fenced or indented)."""
    out, fenced = [], False
    try:
        text = (ROOT / "README.md").read_text(errors="replace")
    except OSError:
        return out
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if (fenced or line.startswith("    ")) and "blueprint-opt" in line:
            out.append(line.strip())
    return out


def opt_invocations(line):
    """The flag lists of the blueprint-opt commands in one RUN line."""
    try:
        lex = shlex.shlex(line, posix=True, punctuation_chars="|&;<>")
        lex.whitespace_split = True
        tokens = list(lex)
    except ValueError:
        return []
    commands, cur = [], []
    for t in tokens:
        if t in ("|", "||", "&&", ";", "&"):
            commands.append(cur)
            cur = []
        else:
            cur.append(t)
    commands.append(cur)
    result = []
    for cmd in commands:
        idx = [i for i, t in enumerate(cmd) if os.path.basename(t) == "blueprint-opt"]
        if not idx:
            continue
        flags, rest, i = [], cmd[idx[0] + 1:], 0
        while i < len(rest):
            t = rest[i]
            if set(t) <= set("<>&"):  # a redirection and its target
                i += 2
                continue
            if t == "-o":
                i += 2
                continue
            if t == "--pass-pipeline" and i + 1 < len(rest):
                flags.append("--pass-pipeline=" + rest[i + 1])
                i += 2
                continue
            if t.startswith("-") and t != "--" and len(t) > 1 and not re.fullmatch(r"-?\d+", t):
                flags.append(t)
            i += 1
        if any(f in DROP_OPTIONS for f in flags):
            continue
        result.append(flags)
    return result


def build_pipelines(tools, runner, tmpdir, pool):
    pipes = {}

    def add(tool, args, origin=None):
        p = pipes.setdefault((tool, tuple(args)), Pipe(tool, args))
        if origin:
            p.origin.add(origin)
        return p

    for args in FIXED_PIPELINES:
        add("opt", args)
    test_files = sorted(ROOT.glob("test/**/*.mlir")) + sorted(ROOT.glob("test/**/*.test"))
    for path in test_files:
        rel = str(path.relative_to(ROOT))
        for line in run_lines(path):
            for flags in opt_invocations(line):
                add("opt", flags, rel)
    for line in readme_commands():
        for flags in opt_invocations(line):
            add("opt", flags, "README.md")
    for name in tools.passes:
        add("opt", ["--" + name])
    for mode in tools.mlir_modes():
        add("translate", [mode])
    # Drop extracted pipelines the tool refuses on its command line (tests of
    # bad flags): on an empty module they fail with "blueprint-opt: ...".
    empty = tmpdir / "empty.mlir"
    empty.write_bytes(b"")
    candidates = [p for p in pipes.values() if p.tool == "opt" and p.args]

    def check(p):
        rc, _, err, to = runner.run([tools.opt, *p.args, empty])
        return rc == 1 and err.lstrip().startswith(b"blueprint-opt:")

    refused = list(pool.map(check, candidates))
    fixed = {("opt", tuple(a)) for a in FIXED_PIPELINES}
    for p, bad in zip(candidates, refused):
        if bad and p.key not in fixed:
            del pipes[p.key]
    return sorted(pipes.values(), key=lambda p: (p.tool, p.args))


# ---------------------------------------------------------------- sources


class Source:
    def __init__(self, name, data, origin=(), ext="mlir"):
        self.name = name
        self.data = data
        self.origin = set(origin)  # pipeline keys it is known to go through
        self.ext = ext


def spec_kind(spec):
    w = spec.get("workload") if isinstance(spec, dict) else None
    if isinstance(w, dict) and ("batch" in w or "prompt_tokens" in w):
        return "inference"
    return "training"


def load_specs():
    specs = []
    files = sorted(ROOT.glob("test/Inputs/specs/*.json")) + sorted(ROOT.glob("test/Examples/*.spec.json"))
    for path in files:
        try:
            specs.append((str(path.relative_to(ROOT)), json.loads(path.read_text())))
        except (OSError, ValueError):
            pass
    case_files = [ROOT / "test/Inputs/calculon/recorded-cases.json",
                  ROOT / "test/Inputs/calculon/tp-overlap-cases.json",
                  ORACLES / "calculon/seqsel-table5.json",
                  ORACLES / "calculon/fullmodel-random.json"]
    case_files += sorted((ORACLES / "inference").glob("*.json"))
    for path in case_files:
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        for case in doc.get("cases", []) if isinstance(doc, dict) else []:
            if all(k in case for k in ("model", "workload", "mapping")):
                spec = {k: case[k] for k in ("model", "workload", "mapping")}
                specs.append((f"{path.name}#{case.get('name', len(specs))}", spec))
    return [(name, spec, spec_kind(spec)) for name, spec in specs]


def build_sources(tools, runner, tmpdir, pipes, pool):
    """(test files, valid chunks and generated IR, spec sources, spec commands)."""
    origin_of = {}
    for p in pipes:
        for f in p.origin:
            origin_of.setdefault(f, set()).add(p.key)
    files = []
    for path in sorted(ROOT.glob("test/**/*.mlir")):
        rel = str(path.relative_to(ROOT))
        files.append(Source(rel, path.read_bytes(), origin_of.get(rel, ())))
    chunks = []
    for f in files:
        text = f.data.decode("latin-1")
        parts = SPLIT_RE.split(text)
        for i, part in enumerate(parts):
            name = f.name if len(parts) == 1 else f"{f.name}#{i}"
            chunks.append(Source(name, part.encode("latin-1"), f.origin))

    def parses(src):
        path = tmpdir / f"chunk-{abs(hash(src.name))}.mlir"
        path.write_bytes(src.data)
        rc, _, _, _ = runner.run([tools.opt, path])
        return rc == 0

    valid = [c for c, ok in zip(chunks, pool.map(parses, chunks)) if ok]

    specs = load_specs()
    generated, spec_cmds = [], {}
    imports = [m for m in tools.spec_modes() if m.startswith("--import")]
    dist_pipes = [a for a in FIXED_PIPELINES if any("distribute" in x for x in a)]
    decompose = ["--model-decompose-transformer"]
    dist_only = [["--" + p] for p in tools.passes if p.startswith("distribute-")]
    local = []
    for path in sorted(ROOT.glob("test/Inputs/specs/*.json")) + sorted(ROOT.glob("test/Examples/*.json")):
        try:
            spec = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        local.append((str(path.relative_to(ROOT)), spec, spec_kind(spec)))

    def gen(item):
        name, spec, kind = item
        out = []
        path = tmpdir / f"gen-{abs(hash(name))}.json"
        path.write_text(json.dumps(spec))
        for mode in imports:
            rc, model, _, _ = runner.run([tools.translate, mode, path], capture_stdout=True)
            if rc != 0 or not model.strip():
                continue
            base = f"gen:{Path(name).name}{mode.replace('--import-transformer', '')}"
            out.append(Source(base + ".model.mlir", model))
            for args in [decompose] + dist_only + dist_pipes:
                rc, ir, _, _ = runner.run([tools.opt, *args], stdin_bytes=model, capture_stdout=True)
                if rc == 0 and ir.strip():
                    tag = "decomposed" if args == decompose else "plan" if "plan-" in args[0] else "dist"
                    tag += str(dist_pipes.index(args)) if args in dist_pipes else ""
                    out.append(Source(f"{base}.{tag}.mlir", ir, {("opt", tuple(args))}))
        return out

    for out in pool.map(gen, local):
        generated.extend(out)

    # Which spec modes accept which kind of spec, and which pipelines accept
    # the imports (so the piped commands exercise the deep passes).
    def mode_ok(item):
        mode, kind = item
        rep = next((s for n, s, k in local if k == kind), None)
        if rep is None:
            return False, None
        path = tmpdir / f"rep-{kind}.json"
        path.write_text(json.dumps(rep))
        rc, out, _, _ = runner.run([tools.translate, mode, path], capture_stdout=True)
        return rc == 0, out

    items = [(m, k) for m in tools.spec_modes() for k in ("training", "inference")]
    for (mode, kind), (ok, out) in zip(items, pool.map(mode_ok, items)):
        if not ok:
            continue
        spec_cmds.setdefault(kind, []).append((mode, None))
        if mode.startswith("--import") and out:
            for args in dist_pipes:
                rc, _, _, _ = runner.run([tools.opt, *args], stdin_bytes=out)
                if rc == 0:
                    spec_cmds[kind].append((mode, tuple(args)))
    return files, valid, generated, specs, spec_cmds


# ---------------------------------------------------------------- MLIR mutators


def comment_mask(text):
    """Spans of comment lines, which semantic mutants leave alone."""
    return [(m.start(), m.end()) for m in re.finditer(r"^[ \t]*//[^\n]*", text, re.M)]


def in_spans(pos, spans):
    return any(a <= pos < b for a, b in spans)


def skip_string(s, i):
    i += 1
    while i < len(s):
        if s[i] == "\\":
            i += 2
            continue
        if s[i] == '"' or s[i] == "\n":
            return i + 1
        i += 1
    return i


def scan_value(s, i):
    """End of the attribute value starting at i (balanced brackets and strings)."""
    depth, n = 0, len(s)
    while i < n:
        c = s[i]
        if c == '"':
            i = skip_string(s, i)
            continue
        if c == "-" and i + 1 < n and s[i + 1] == ">":
            i += 2
            continue
        if c in "([{<":
            depth += 1
        elif c in ")]}>":
            if depth == 0:
                break
            depth -= 1
        elif (c == "," or c == "\n") and depth == 0:
            break
        i += 1
    j = i
    while j > 0 and s[j - 1] in " \t":
        j -= 1
    return j


def attr_entries(text):
    """(key start, key end, value start, value end) of `name = value` entries."""
    spans = comment_mask(text)
    strings = [(m.start(), m.end()) for m in STRING_RE.finditer(text)]
    out = []
    for m in ATTR_KEY_RE.finditer(text):
        if in_spans(m.start(), spans) or in_spans(m.start(), strings):
            continue
        vs = m.end()
        ve = scan_value(text, vs)
        if ve > vs:
            out.append((m.start(1), m.end(1), vs, ve))
    return out


def shaped_types(text):
    """(content start, content end) of tensor<...>/memref<...>/vector<...>."""
    out = []
    for m in SHAPED_RE.finditer(text):
        i, depth = m.end(), 1
        while i < len(text) and depth:
            if text[i] == "<":
                depth += 1
            elif text[i] == ">" and text[i - 1] != "-":
                depth -= 1
            elif text[i] == "\n":
                break
            i += 1
        if depth == 0:
            out.append((m.end(), i - 1))
    return out


def shaped_type_at(text, a, b):
    """The whole type text ("tensor<...>") whose content is text[a:b]."""
    m = re.search(r"(tensor|memref|vector)<$", text[max(0, a - 8):a])
    return text[a - len(m.group(0)):b + 1] if m else None


def mut_truncate(rng, s, ctx):
    k = rng.randrange(len(s) + 1)
    return s[:k], f"truncate@{k}"


def mut_flip(rng, s, ctx):
    if not s:
        return s, "flip(empty)"
    b = list(s)
    n = rng.choice([1, 1, 2, 3, 8])
    for _ in range(n):
        i = rng.randrange(len(b))
        r = rng.random()
        if r < 0.5:
            b[i] = chr(ord(b[i]) ^ (1 << rng.randrange(8)))
        elif r < 0.8:
            b[i] = chr(rng.randrange(256))
        else:
            b[i] = rng.choice("{}()[]<>:,=%@\"'#!^?*x0123456789-")
    return "".join(b), f"flip x{n}"


def mut_bad_utf8(rng, s, ctx):
    spots = [m.start() + rng.randrange(max(1, m.end() - m.start()))
             for m in re.finditer(r'"[^"\n]*"|[A-Za-z_][\w.]*', s)]
    i = rng.choice(spots) if spots else rng.randrange(len(s) + 1)
    bad = rng.choice(BAD_UTF8)
    return s[:i] + bad + s[i:], f"bad-utf8 {bad.encode('latin-1')!r}@{i}"


def file_tokens(s):
    return [(m.start(), m.end()) for m in TOKEN_RE.finditer(s)]


def mut_insert_token(rng, s, ctx):
    toks = file_tokens(s)
    if toks and rng.random() < 0.5:
        a, b = rng.choice(toks)
        tok = s[a:b]
    else:
        tok = rng.choice(FIXED_TOKENS)
    pos = rng.choice(toks)[rng.randrange(2)] if toks else 0
    sep = rng.choice(["", " "])
    return s[:pos] + sep + tok + sep + s[pos:], f"insert {tok!r}@{pos}"


def mut_delete_token(rng, s, ctx):
    toks = file_tokens(s)
    if not toks:
        return s, "delete(none)"
    a, b = rng.choice(toks)
    if rng.random() < 0.3:
        return s[:a] + s[a:b] + " " + s[a:b] + s[b:], f"duplicate {s[a:b]!r}@{a}"
    return s[:a] + s[b:], f"delete {s[a:b]!r}@{a}"


def mut_op_name(rng, s, ctx):
    occ = list(OPNAME_RE.finditer(s))
    if not occ:
        return mut_insert_token(rng, s, ctx)
    m = rng.choice(occ)
    dialect, mnem = m.group(1), m.group(2)
    r = rng.random()
    ops = ctx["op_names"] or [m.group(0)]
    if r < 0.35:
        new = rng.choice([d for d in ("model", "dist", "plan") if d != dialect]) + "." + mnem
    elif r < 0.7:
        new = rng.choice(ops)
    elif r < 0.85:
        same = [o for o in ops if o.startswith(dialect + ".")] or ops
        new = rng.choice(same)
    else:
        other = rng.choice(ops)
        new = dialect + "." + other.split(".", 1)[1]
    return s[:m.start()] + new + s[m.end():], f"op {m.group(0)} -> {new}"


def mut_attr(rng, s, ctx):
    entries = attr_entries(s)
    if not entries:
        return mut_insert_token(rng, s, ctx)
    ks, ke, vs, ve = rng.choice(entries)
    key, val = s[ks:ke], s[vs:ve]
    r = rng.random()
    if r < 0.2:  # delete the entry and one adjacent comma
        a, b = ks, ve
        rest = s[b:]
        m = re.match(r"\s*,\s*", rest)
        if m:
            b += m.end()
        else:
            m = re.search(r",\s*$", s[:a])
            if m:
                a = m.start()
        return s[:a] + s[b:], f"attr delete {key}"
    if r < 0.35:
        return s[:ve] + ", " + s[ks:ve] + s[ve:], f"attr duplicate {key}"
    if r < 0.45:
        names = ctx["attr_names"] + [key + "x", "x", key.upper()]
        new = rng.choice(names)
        return s[:ks] + new + s[ke:], f"attr rename {key} -> {new}"
    # set to a wrong value
    if r < 0.6 and re.fullmatch(r"-?\d+(\s*:\s*\w+)?", val):
        new = f'"{val.split(":")[0].strip()}"'
    elif r < 0.6 and val.startswith('"'):
        new = rng.choice(["42 : i64", "0", "-1 : i64", "[" + val + "]", "@" + re.sub(r"\W", "_", val[1:-1] or "x")])
    elif r < 0.6 and val.startswith("["):
        new = rng.choice(["@x", '"x"', "1 : i64", "array<i64: 1>"])
    elif r < 0.6 and val.startswith("@"):
        new = rng.choice(["[" + val + "]", '"' + val[1:] + '"', "1 : i64"])
    else:
        new = rng.choice(ATTR_VALUES)
    return s[:vs] + new + s[ve:], f"attr {key} = {new}"


def mut_shape(rng, s, ctx):
    types = shaped_types(s)
    if not types:
        return mut_attr(rng, s, ctx)
    a, b = rng.choice(types)
    content = s[a:b]
    m = DIMS_RE.match(content)
    dims = [d for d in m.group(1).split("x") if d]
    elt = m.group(2)
    r = rng.random()
    if dims and r < 0.5:
        i = rng.randrange(len(dims))
        dims[i] = rng.choice(DIM_VALUES)
        what = f"dim{i}={dims[i]}"
    elif r < 0.65 and dims:
        i = rng.randrange(len(dims))
        del dims[i]
        what = f"rank-1 (drop dim{i})"
    elif r < 0.8:
        i = rng.randrange(len(dims) + 1)
        dims.insert(i, rng.choice(["1", "2", "?", dims[i - 1] if dims and i else "4"]))
        what = f"rank+1 (insert at {i})"
    elif r < 0.9:
        elt = rng.choice(ELEMENT_TYPES)
        what = f"element {elt}"
    else:
        new = rng.choice(["*x" + elt, elt, "0x" + elt])
        return s[:a] + new + s[b:], f"shape {content} -> {new}"
    new = "".join(d + "x" for d in dims) + elt
    return s[:a] + new + s[b:], f"shape {content} -> {new} ({what})"


def mut_lines(rng, s, ctx):
    lines = s.split("\n")
    if len(lines) < 2:
        return mut_flip(rng, s, ctx)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    r = rng.random()
    if r < 0.35:
        what = f"delete line {i + 1}"
        del lines[i]
    elif r < 0.6:
        what = f"duplicate line {i + 1}"
        lines.insert(i, lines[i])
    elif r < 0.85:
        what = f"swap lines {i + 1},{j + 1}"
        lines[i], lines[j] = lines[j], lines[i]
    else:
        what = f"move line {i + 1} to {j + 1}"
        lines.insert(j, lines.pop(i))
    return "\n".join(lines), what


def mut_nesting(rng, s, ctx):
    n = rng.choice([999, 1000, 1001, 2000, 100000])
    kind = rng.choice(["array", "dict", "region", "type", "paren"])
    bomb = {"array": "[" * n + "]" * n, "dict": "{a = " * n + "1" + "}" * n,
            "region": "{" * n + "}" * n, "type": "tensor<" * n + "f32" + ">" * n,
            "paren": "(" * n + ")" * n}[kind]
    entries = attr_entries(s)
    if entries and kind in ("array", "dict"):
        ks, ke, vs, ve = rng.choice(entries)
        return s[:vs] + bomb + s[ve:], f"nest {kind} x{n} in {s[ks:ke]}"
    toks = file_tokens(s)
    pos = rng.choice(toks)[0] if toks else 0
    return s[:pos] + bomb + s[pos:], f"nest {kind} x{n}@{pos}"


SYNTAX_MUTATORS = [
    (mut_truncate, 2), (mut_flip, 3), (mut_bad_utf8, 2), (mut_insert_token, 3), (mut_delete_token, 2),
    (mut_op_name, 3), (mut_attr, 6), (mut_shape, 3), (mut_lines, 2), (mut_nesting, 0.3),
]


def pick_weighted(rng, items):
    total = sum(w for _, w in items)
    x = rng.random() * total
    for item, w in items:
        x -= w
        if x < 0:
            return item
    return items[-1][0]


def syntax_mutant(rng, data, ctx):
    s = data.decode("latin-1")
    n = 1 if rng.random() < 0.7 else rng.randint(2, 4)
    what = []
    for _ in range(n):
        fn = pick_weighted(rng, SYNTAX_MUTATORS)
        s, w = fn(rng, s, ctx)
        what.append(w)
    return s.encode("latin-1", "replace"), "; ".join(what)


def int_choices(rng, v, pool):
    c = [0, 1, -1, v + 1, v - 1, v * 2, v * 1000, 3, 7, 2**31 - 1, 2**31, 2**32, 2**53 + 1, 2**62, I64_MAX,
         -2**63, 2**63, 2**24, 2**24 + 1, -v]
    if v > 1:
        c.append(v // 2)
    if pool:
        c.append(rng.choice(pool))
    return [x for x in c if x != v] or [v + 1]


def semantic_sites(s):
    """One-value sites of valid IR: (start, end, kind)."""
    spans = comment_mask(s)
    strings = [(m.start(), m.end()) for m in STRING_RE.finditer(s)]
    sites = []

    def ok(pos):
        return not in_spans(pos, spans) and not in_spans(pos, strings)

    for m in INT_RE.finditer(s):
        if ok(m.start()):
            sites.append((m.start(), m.end(), "int"))
    for m in FLOAT_RE.finditer(s):
        if ok(m.start()):
            sites.append((m.start(), m.end(), "float"))
    for a, b in shaped_types(s):
        if in_spans(a, spans):
            continue
        i = a
        for d in DIMS_RE.match(s[a:b]).group(1).split("x")[:-1]:
            sites.append((i, i + len(d), f"dim:{a}:{b}"))
            i += len(d) + 1
    for m in STRING_RE.finditer(s):
        if in_spans(m.start(), spans):
            continue
        after = s[m.end():m.end() + 1]
        before = s[max(0, m.start() - 1):m.start()]
        if after == "(" or before == "@":
            continue
        sites.append((m.start(), m.end(), "string"))
    for m in BOOL_RE.finditer(s):
        if ok(m.start()):
            sites.append((m.start(), m.end(), "bool"))
    for m in SYMBOL_RE.finditer(s):
        if ok(m.start()):
            sites.append((m.start(), m.end(), "symbol"))
    for m in ARRAY_RE.finditer(s):
        if ok(m.start()):
            sites.append((m.start(), m.end(), "array"))
    return sites


def semantic_mutant(rng, data, ctx):
    s = data.decode("latin-1")
    sites = semantic_sites(s)
    if not sites:
        return syntax_mutant(rng, data, ctx)
    a, b, kind = rng.choice(sites)
    old = s[a:b]
    if kind == "int":
        pool = [int(x) for x in INT_RE.findall(s)[:2000]]
        new = str(rng.choice(int_choices(rng, int(old), pool)))
    elif kind == "float":
        new = rng.choice(["0.0", "-1.0", "1.0e308", "-0.0", "1.5", "3.0e38", "6.0e4", "1.0e-45"])
    elif kind.startswith("dim"):
        if old == "?":
            new = rng.choice(["1", "4", "0"])
        else:
            v = int(old)
            new = str(rng.choice([0, 1, v + 1, v - 1 if v > 1 else 2, v * 2, 3, 2**31, 2**32, 2**62, I64_MAX]
                                 + ([v // 2] if v > 1 else []))) if rng.random() < 0.85 else "?"
        ta, tb = (int(x) for x in kind.split(":")[1:])
        whole = shaped_type_at(s, ta, tb)
        if whole and rng.random() < 0.75:
            # The same dimension of every use of this type, so the IR still
            # type-checks and the mutant reaches the passes.
            start = ta - (len(whole) - (tb - ta) - 1)
            new_whole = s[start:a] + new + s[b:tb + 1]
            line = s.count("\n", 0, a) + 1
            n = s.count(whole)
            return (s.replace(whole, new_whole).encode("latin-1", "replace"),
                    f"type@{line} (all {n} uses): {whole[:60]} -> {new_whole[:60]}")
    elif kind == "string":
        pool = sorted(set(STRING_RE.findall(s)))
        r = rng.random()
        if r < 0.45 and ctx["enum_strings"]:
            new = '"' + rng.choice(ctx["enum_strings"]) + '"'
        elif r < 0.8 and pool:
            new = rng.choice(pool)
        else:
            inner = old[1:-1]
            new = '"' + rng.choice(["", inner + "x", inner.upper(), inner[:-1], inner + "." + inner,
                                    "sha256:" + "f" * 64, inner.replace("1", "2")]) + '"'
    elif kind == "bool":
        new = "false" if old == "true" else "true"
    elif kind == "symbol":
        pool = sorted(set(SYMBOL_RE.findall(s)) - {old})
        new = rng.choice(pool) if pool and rng.random() < 0.7 else rng.choice(["@nosuch", old + "x"])
    else:  # array<T: a, b, ...>: drop, duplicate, or add one element
        m = ARRAY_RE.fullmatch(old)
        elts = [e.strip() for e in (m.group(2) or "").split(",") if e.strip()]
        r = rng.random()
        if elts and r < 0.4:
            del elts[rng.randrange(len(elts))]
        elif elts and r < 0.7:
            i = rng.randrange(len(elts))
            elts.insert(i, elts[i])
        else:
            elts.insert(rng.randrange(len(elts) + 1), rng.choice(["0", "1", "-1", str(len(elts)), "7"]))
        new = f"array<{m.group(1)}" + (": " + ", ".join(elts) if elts else "") + ">"
    if new == old:  # always change exactly one value
        new = {"string": old[:-1] + 'x"', "symbol": old + "x", "float": old + "1"}.get(kind, old + "1")
    line = s.count("\n", 0, a) + 1
    return (s[:a] + new + s[b:]).encode("latin-1", "replace"), f"{kind.split(':')[0]}@{line}: {old[:60]} -> {new[:60]}"


# ---------------------------------------------------------------- spec mutators


RAW_MARK = "\x00RAW{}\x00"


def json_paths(obj, prefix=()):
    """Every (container path, key) in obj."""
    out = []
    if isinstance(obj, dict):
        for k in obj:
            out.append((prefix, k))
            out.extend(json_paths(obj[k], prefix + (k,)))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.append((prefix, i))
            out.extend(json_paths(v, prefix + (i,)))
    return out


def get_path(obj, path):
    for k in path:
        obj = obj[k]
    return obj


def dump_spec(obj, raws, rng, ensure_ascii):
    text = json.dumps(obj, indent=rng.choice([None, 1]), ensure_ascii=ensure_ascii)
    for i, raw in enumerate(raws):
        text = text.replace(json.dumps(RAW_MARK.format(i)), raw)
    return text


def json_mutation(rng, spec, ctx, raws):
    paths = json_paths(spec)
    r = rng.random()
    if not paths or r < 0.04:  # top-level shape
        choice = rng.choice(["list", "null", "string", "empty", "swap", "extra", "drop"])
        if choice == "list":
            return [spec], "top-level wrapped in a list"
        if choice == "null":
            return None, "top-level null"
        if choice == "string":
            return "spec", "top-level string"
        if choice == "empty":
            return {}, "top-level {}"
        if choice == "swap" and isinstance(spec, dict) and len(spec) >= 2:
            a, b = rng.sample(sorted(spec), 2)
            spec[a], spec[b] = spec[b], spec[a]
            return spec, f"swap sections {a},{b}"
        if choice == "drop" and isinstance(spec, dict) and spec:
            k = rng.choice(sorted(spec))
            del spec[k]
            return spec, f"delete section {k}"
        if isinstance(spec, dict):
            spec["system"] = "a100_80g"
            return spec, "extra top-level field"
        return spec, "nothing"
    parent_path, key = rng.choice(paths)
    parent = get_path(spec, parent_path)
    val = parent[key]
    where = ".".join(str(p) for p in parent_path + (key,))
    r = rng.random()
    if r < 0.08:
        del parent[key]
        return spec, f"delete {where}"
    if r < 0.3:
        new = rng.choice(JSON_VALUES)
        parent[key] = copy.deepcopy(new)
        return spec, f"{where} = {json.dumps(new)}"
    if r < 0.36:
        raw = rng.choice(JSON_RAW)
        parent[key] = RAW_MARK.format(len(raws))
        raws.append(raw)
        return spec, f"{where} = raw {raw}"
    if r < 0.76 and isinstance(val, bool):
        parent[key] = not val
        return spec, f"{where} = {json.dumps(not val)}"
    if r < 0.76 and isinstance(val, int):
        new = rng.choice(int_choices(rng, val, ctx["spec_ints"]) + [val * 3, val + 2, 2, 4, 8, 16, 5, 6]
                         + [2**20, 2**30, 2**40, 2**52, 2**53 - 1, 10**6, 10**9, 10**12, val * 2**20])
        parent[key] = new
        return spec, f"{where} = {new}"
    if r < 0.76 and isinstance(val, float):
        new = rng.choice([0.0, -1.0, 1e300, val * 2, val / 3, 0.5, 1.0000001])
        parent[key] = new
        return spec, f"{where} = {new}"
    if r < 0.76 and isinstance(val, str):
        same = sorted(ctx["spec_strings"].get(key, set()) - {val}) if isinstance(key, str) else []
        pool = same * 3 + ctx["enum_strings"][:] + [val.upper(), val + " ", "", val[:-1], "none", "\xff"]
        new = rng.choice(pool)
        parent[key] = new
        return spec, f"{where} = {json.dumps(new)}"
    if r < 0.84:  # unknown or foreign field
        target = parent if isinstance(parent, dict) else spec
        if isinstance(val, dict):
            target = val
        if not isinstance(target, dict):
            return spec, "nothing"
        k = rng.choice(JSON_KEYS + sorted(ctx["spec_keys"]))
        v = rng.choice(JSON_VALUES + [1, 2, 4, "float16", True])
        target[k] = copy.deepcopy(v)
        return spec, f"add field {k!r} = {json.dumps(v)}"
    if r < 0.9:  # deepen nesting
        depth = rng.choice([1, 1, 2, 127, 128, 129, 1000, 100000])
        if depth <= 2:
            new = val
            for _ in range(depth):
                new = [new] if rng.random() < 0.5 else {"value": new}
            parent[key] = new
        else:  # written as raw text: too deep for Python's own json
            inner = json.dumps(val) if not isinstance(val, str) or RAW_MARK[:4] not in val else "1"
            if rng.random() < 0.5:
                raw = "[" * depth + inner + "]" * depth
            else:
                raw = '{"value": ' * depth + inner + "}" * depth
            parent[key] = RAW_MARK.format(len(raws))
            raws.append(raw)
        return spec, f"{where} nested x{depth}"
    # transplant: the same section or field from another spec
    other = rng.choice(ctx["spec_objs"])
    if isinstance(key, str) and isinstance(other, dict):
        for sec in other.values():
            if isinstance(sec, dict) and key in sec:
                parent[key] = copy.deepcopy(sec[key])
                return spec, f"{where} = {json.dumps(sec[key])[:60]} (from another spec)"
        if key in other:
            parent[key] = copy.deepcopy(other[key])
            return spec, f"{where} from another spec"
    parent[key] = RAW_MARK.format(len(raws))
    raws.append("1e400")
    return spec, f"{where} = raw 1e400"


def byte_mutation(rng, text):
    s = text
    r = rng.random()
    if r < 0.3:
        k = rng.randrange(len(s) + 1)
        return s[:k], f"truncate@{k}"
    if r < 0.55:
        return mut_flip(rng, s, None)
    if r < 0.7:
        spots = [m.start() + 1 for m in re.finditer(r'"', s)] or [0]
        i = rng.choice(spots)
        bad = rng.choice(BAD_UTF8)
        return s[:i] + bad + s[i:], f"bad-utf8 {bad.encode('latin-1')!r}@{i}"
    if r < 0.85:
        pos = rng.randrange(len(s) + 1)
        tok = rng.choice(JSON_TOKENS)
        return s[:pos] + tok + s[pos:], f"insert {tok!r}@{pos}"
    # a duplicated key, which json.dumps cannot write
    keys = list(re.finditer(r'"(\w+)":\s*([^,{}\[\]]+)', s))
    if not keys:
        return s[: len(s) // 2], "truncate half"
    m = rng.choice(keys)
    dup = m.group(0) + ", " + f'"{m.group(1)}": ' + rng.choice(["0", "-1", '"x"', "null", m.group(2)])
    return s[:m.start()] + dup + s[m.end():], f"duplicate key {m.group(1)}"


def spec_mutant(rng, spec, ctx):
    obj = copy.deepcopy(spec)
    raws, what = [], []
    if rng.random() < 0.85:
        n = 1 if rng.random() < 0.7 else rng.randint(2, 3)
        for _ in range(n):
            obj, w = json_mutation(rng, obj, ctx, raws)
            what.append(w)
        return dump_spec(obj, raws, rng, ensure_ascii=rng.random() < 0.5).encode("utf-8"), "; ".join(what)
    # Byte level: ASCII JSON text, mutated as latin-1 so every byte value fits.
    text = dump_spec(obj, raws, rng, ensure_ascii=True)
    n = 1 if rng.random() < 0.8 else 2
    for _ in range(n):
        text, w = byte_mutation(rng, text)
        what.append(w)
    return text.encode("latin-1", "replace"), "; ".join(what)


# ---------------------------------------------------------------- cases


class Campaign:
    def __init__(self, args):
        self.args = args
        self.runner = Runner(args.timeout)
        self.tmpdir = Path(tempfile.mkdtemp(prefix="blueprint-fuzz-"))
        self.crash_dir = Path(args.crash_dir)
        if not self.crash_dir.is_absolute():
            self.crash_dir = (Path.cwd() / self.crash_dir)
        self.lock = threading.Lock()
        self.works_cache = {}
        self.log = open(args.log, "w") if args.log else None

    def setup(self, pool):
        t0 = time.monotonic()
        self.tools = Tools(self.args.bin_dir, self.runner)
        self.pipes = build_pipelines(self.tools, self.runner, self.tmpdir, pool)
        self.pipe_index = {p.key: i for i, p in enumerate(self.pipes)}
        self.files, self.valid, self.generated, self.specs, self.spec_cmds = build_sources(
            self.tools, self.runner, self.tmpdir, self.pipes, pool)
        self.semantic_sources = self.valid + self.generated
        self.syntax_extra = self.valid + self.generated
        strings, keys, ints = {}, set(), set()
        for _, spec, _ in self.specs:
            for path, key in json_paths(spec):
                v = get_path(spec, path + (key,))
                if isinstance(key, str):
                    keys.add(key)
                    if isinstance(v, str):
                        strings.setdefault(key, set()).add(v)
                if isinstance(v, int) and not isinstance(v, bool):
                    ints.add(v)
        self.ctx = {
            "op_names": self.tools.op_names,
            "enum_strings": self.tools.enum_strings,
            "attr_names": self.tools.attr_names or ["id"],
            "spec_strings": strings,
            "spec_keys": keys,
            "spec_ints": sorted(ints),
            "spec_objs": [s for _, s, _ in self.specs],
        }
        all_cmds = sorted({c for cmds in self.spec_cmds.values() for c in cmds}, key=lambda c: (c[0], c[1] or ()))
        for mode in self.tools.spec_modes():  # modes no valid spec passes still get fuzzed
            if (mode, None) not in all_cmds:
                all_cmds.append((mode, None))
        self.all_spec_cmds = all_cmds
        print(f"[fuzz] setup {time.monotonic() - t0:.1f} s: {len(self.pipes)} pipelines, "
              f"{len(self.files)} test files, {len(self.valid)} valid chunks, {len(self.generated)} generated IR, "
              f"{len(self.specs)} specs, {len(all_cmds)} spec commands", file=sys.stderr)

    def plan(self, n_mlir, n_spec):
        """Case descriptors, deterministic for the seed."""
        rng = random.Random(f"{self.args.seed}:plan")
        product = [(("file", i), j) for i in range(len(self.files)) for j in range(len(self.pipes))]
        rng.shuffle(product)
        sem_order = list(range(len(self.semantic_sources)))
        rng.shuffle(sem_order)
        cases, k_syn, k_sem = [], 0, 0
        for i in range(n_mlir):
            if rng.random() < 0.5 or not sem_order:
                if k_syn % 3 != 2 or not self.syntax_extra:
                    src, pipe = product[(k_syn - k_syn // 3) % len(product)]
                else:
                    src, pipe = ("extra", rng.randrange(len(self.syntax_extra))), rng.randrange(len(self.pipes))
                k_syn += 1
                cases.append(("m%d" % i, "syntax", src, pipe))
            else:
                cases.append(("m%d" % i, "semantic", ("sem", sem_order[k_sem % len(sem_order)]), None))
                k_sem += 1
        spec_order = list(range(len(self.specs)))
        rng.shuffle(spec_order)
        for i in range(n_spec):
            cases.append(("s%d" % i, "spec", spec_order[i % len(spec_order)], None))
        return cases

    def source(self, ref):
        kind, i = ref
        return {"file": self.files, "extra": self.syntax_extra, "sem": self.semantic_sources}[kind][i]

    def pipe_argv(self, pipe, path):
        if pipe.tool == "opt":
            return [self.tools.opt, *pipe.args, path]
        return [self.tools.translate, *pipe.args, path]

    def works(self, cid, src, pipe):
        """Whether the unmutated source goes through pipe cleanly (cached);
        a crash of the unmutated source is reported as the crash of the
        first case that tries it."""
        key = (src.name, pipe.key)
        with self.lock:
            entry = self.works_cache.setdefault(key, {"lock": threading.Lock(), "ok": None})
        with entry["lock"]:
            if entry["ok"] is not None:
                return entry["ok"], None
            path = self.tmpdir / f"orig-{cid}.{src.ext}"
            path.write_bytes(src.data)
            argv = self.pipe_argv(pipe, path)
            rc, _, err, to = self.runner.run(argv)
            crash = classify(rc, err, to)
            record = None
            if to and pipe.key not in src.origin:
                # A real workload (GPT-3 unrolled) through a pipeline of
                # another test can take longer than a case may: too big for
                # this pairing, not a hang. The source's own pipelines run
                # in the lit suite without a limit.
                print(f"[fuzz] {src.name} through {' '.join(pipe.args)[:80]}: over {self.runner.timeout:g} s, pairing skipped",
                      file=sys.stderr)
                crash = None
            elif crash:
                record = self.record(cid, src.name, "unmutated source", src.data, path, [argv], 0, crash, rc, err,
                                     to)
            entry["ok"] = rc == 0 and not crash
            path.unlink()
            return entry["ok"], record

    def semantic_pipe(self, cid, rng, src):
        """A pipeline the unmutated source passes; mostly one that runs
        Blueprint's transformations or checks, so the mutant gets deep."""
        if rng.random() < 0.85:
            deep = [p for p in self.pipes if self.is_deep(p)]
            rest = [p for p in self.pipes if not self.is_deep(p)]
        else:
            deep, rest = [], list(self.pipes)
        rng.shuffle(deep)
        rng.shuffle(rest)
        # The deep pipelines of the source's own RUN lines first.
        deep.sort(key=lambda p: p.key not in src.origin)
        tried = 0
        for p in deep + rest:
            if tried >= 10:
                break
            if not p.args:
                continue
            tried += 1
            ok, record = self.works(cid, src, p)
            if record:
                return p, record
            if ok:
                return p, None
        return self.pipes[self.pipe_index[("opt", ())]], None

    def is_deep(self, pipe):
        """Whether pipe runs one of Blueprint's passes besides the verifier."""
        words = {w.lstrip("-") for w in re.split(r"[\s(),{}=]+", " ".join(pipe.args))}
        return bool(words & (set(self.tools.passes) - {"blueprint-verify"}))

    def run_case(self, case):
        try:
            return self._run_case(case)
        except Exception:  # a harness bug must not end the campaign
            import traceback
            print(f"[fuzz] harness error in case {case[0]}:\n{traceback.format_exc()}", file=sys.stderr)
            return None

    def _run_case(self, case):
        cid, kind, ref, pipe_i = case
        rng = random.Random(f"{self.args.seed}:{cid}")
        if kind == "spec":
            name, spec, skind = self.specs[ref]
            data, what = spec_mutant(rng, spec, self.ctx)
            cmds = self.spec_cmds.get(skind, [])
            weighted = [(c, 8) for c in cmds] + [(c, 1) for c in self.all_spec_cmds]
            mode, pipe_args = pick_weighted(rng, weighted)
            path = self.tmpdir / f"case-{cid}.json"
            path.write_bytes(data)
            stages = [[self.tools.translate, mode, path]]
            if pipe_args is not None:
                stages.append([self.tools.opt, *pipe_args])
            return self.execute(cid, name, what, data, path, stages)
        src = self.source(ref)
        if kind == "syntax":
            pipe = self.pipes[pipe_i]
            data, what = syntax_mutant(rng, src.data, self.ctx)
        else:
            pipe, record = self.semantic_pipe(cid, rng, src)
            if record:
                return record
            data, what = semantic_mutant(rng, src.data, self.ctx)
        path = self.tmpdir / f"case-{cid}.mlir"
        path.write_bytes(data)
        return self.execute(cid, src.name, f"{kind}: {what}", data, path, [self.pipe_argv(pipe, path)])

    def execute(self, cid, src_name, what, data, path, stages):
        stdin, result, rcs, first = None, None, [], ""
        for n, argv in enumerate(stages):
            last = n == len(stages) - 1
            rc, out, err, to = self.runner.run(argv, stdin_bytes=stdin, capture_stdout=not last)
            rcs.append("timeout" if to else rc)
            first = err.decode("utf-8", "replace").strip().split("\n")[0][:200]
            crash = classify(rc, err, to)
            if crash:
                result = self.record(cid, src_name, what, data, path, stages, n, crash, rc, err, to)
                break
            if rc != 0:
                break
            stdin = out
        if self.log:
            entry = {"id": cid, "source": src_name, "what": what, "rc": rcs,
                     "cmd": " | ".join(shell_join(a[1:]) for a in stages), "stderr": first}
            with self.lock:
                self.log.write(json.dumps(entry) + "\n")
        try:
            path.unlink()
        except OSError:
            pass
        return result

    def record(self, cid, src_name, what, data, path, stages, stage, kind, rc, err, to):
        sig = signature_line(kind, err, self.tmpdir)
        self.crash_dir.mkdir(parents=True, exist_ok=True)
        stem = f"seed{self.args.seed}-{cid}"
        saved = self.crash_dir / f"{stem}{path.suffix}"
        saved.write_bytes(data)
        cmd = " | ".join(shell_join([saved if a == path else a for a in argv]) for argv in stages)
        if kind == "oom":
            cmd = f"(ulimit -v {self.args.mem_limit_mib * 1024}; {cmd})"
        stderr_text = err.decode("utf-8", "replace").replace(str(path), str(saved))
        if len(stderr_text) > 20000:
            stderr_text = stderr_text[:20000] + "\n[... stderr truncated ...]\n"
        (self.crash_dir / f"{stem}.cmd").write_text(
            f"{cmd}\n"
            f"# case {cid} (seed {self.args.seed}) from {src_name}: {what}\n"
            f"# crash: {kind} in stage {stage + 1}, exit {'timeout' if to else rc}\n"
            f"# stderr:\n" + "".join(f"# {l}\n" for l in stderr_text.splitlines()))
        return {"id": cid, "kind": kind, "sig": sig, "cmd": cmd, "input": str(saved), "source": src_name,
                "what": what}

    def cleanup(self):
        shutil.rmtree(self.tmpdir, ignore_errors=True)


def case_order_key(cid):
    return (cid[0], int(cid[1:]))


def main(argv=None):
    ap = argparse.ArgumentParser(description="Blueprint fuzz harness (see the module docstring).")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mlir-cases", type=int, default=None)
    ap.add_argument("--spec-cases", type=int, default=None)
    ap.add_argument("--cases", type=int, default=None, help="total cases, split 5:2 between MLIR and specs")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--bin-dir", default=None)
    ap.add_argument("--crash-dir", default=str(ROOT / "target" / "fuzz-crashes"))
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--mem-limit-mib", type=int, default=4096)
    ap.add_argument("--case", action="append", default=[], help="run only this case id (m123, s45)")
    ap.add_argument("--list", action="store_true", help="print pipelines, modes and sources and exit")
    ap.add_argument("--log", default=None, help="write one JSON line per case (exit codes, first stderr line)")
    args = ap.parse_args(argv)

    n_mlir, n_spec = DEFAULT_MLIR_CASES, DEFAULT_SPEC_CASES
    if args.cases is not None:
        n_mlir = round(args.cases * DEFAULT_MLIR_CASES / (DEFAULT_MLIR_CASES + DEFAULT_SPEC_CASES))
        n_spec = args.cases - n_mlir
    if args.mlir_cases is not None:
        n_mlir = args.mlir_cases
    if args.spec_cases is not None:
        n_spec = args.spec_cases
    if n_mlir < 0 or n_spec < 0 or args.jobs < 1:
        ap.error("case counts must be >= 0 and --jobs >= 1")

    # The limit is set here, before any thread exists, and every child
    # inherits it (safer than preexec_fn in a threaded program).
    limit = args.mem_limit_mib * 1024 * 1024
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))

    camp = Campaign(args)
    start = time.monotonic()
    crashes = []
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            camp.setup(pool)
            if args.list:
                for p in camp.pipes:
                    print("pipeline:", p.label())
                for c in camp.all_spec_cmds:
                    print("spec command:", c[0], "| blueprint-opt " + shell_join(c[1]) if c[1] else "")
                for s in camp.files + camp.generated:
                    print("source:", s.name)
                for s in camp.valid:
                    print("valid chunk:", s.name)
                for name, _, kind in camp.specs:
                    print(f"spec ({kind}):", name)
                return 0
            cases = camp.plan(n_mlir, n_spec)
            if args.case:
                wanted = set(args.case)
                cases = [c for c in cases if c[0] in wanted]
            total, done = len(cases), 0
            futures = [pool.submit(camp.run_case, c) for c in cases]
            for fut in concurrent.futures.as_completed(futures):
                r = fut.result()
                done += 1
                if r:
                    crashes.append(r)
                    print(f"[fuzz] crash {r['kind']} in case {r['id']}: {r['sig'][:160]}", file=sys.stderr)
                if done % 100 == 0 or done == total:
                    print(f"[fuzz] {done}/{total} cases, {len(crashes)} crashes, "
                          f"{time.monotonic() - start:.1f} s", file=sys.stderr)
    finally:
        camp.cleanup()

    crashes.sort(key=lambda r: case_order_key(r["id"]))
    distinct = {}
    for r in crashes:
        distinct.setdefault((r["kind"], r["sig"]), []).append(r)
    if distinct:
        lines = []
        for (kind, sig), rs in distinct.items():
            lines.append(f"CRASH {kind}: {sig} ({len(rs)} cases, e.g. {rs[0]['id']}: {rs[0]['cmd']})")
        camp.crash_dir.mkdir(parents=True, exist_ok=True)
        with open(camp.crash_dir / f"summary-seed{args.seed}.txt", "w") as f:
            for (kind, sig), rs in distinct.items():
                f.write(f"{kind}: {sig}\n")
                for r in rs:
                    f.write(f"  {r['id']} [{r['source']}: {r['what'][:200]}]\n    {r['cmd']}\n")
        for line in lines:
            print(line)
    print(f"[fuzz] done in {time.monotonic() - start:.1f} s", file=sys.stderr)
    sys.stdout.flush()
    print(f"{len(cases)} cases, {len(crashes)} crashes")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
