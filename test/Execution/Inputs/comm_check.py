#!/usr/bin/env python3
"""What the runtime communicated equals what the derived program states.

usage: comm_check.py DIST.mlir < REPORT   (blueprint-run --comm-report's output)

Reads the structured derived program (distribute-transformer-training's
output) as text, independently of Blueprint: the mesh, each stage's chunk
(its blocks), the pipeline's microbatches, the block template's
collectives (id, kind, mesh axes, phase, bytes) and each boundary's
dist.p2p. From them, what each rank must run in one step:

- every tensor- or sequence-parallel collective of the template, once per
  block of its stage and microbatch, with the template's bytes each time;
- the once-per-step collectives (phase optimizer: the data-parallel
  gradient reduction, the tensor-parallel sums of partial weight
  gradients) once per block of its stage, their bytes the template's (the
  runtime runs them per gradient: the calls are the gradients, the bytes
  add up to the template's);
- every boundary transfer once per microbatch, at its sending and its
  receiving stage, with the template's bytes.

Compares with the report's per-rank lines (grouped by the template op they
instantiate) and prints `comm-check: N ranks, M ops match`; exits 1 on any
difference, naming it.
"""
import re
import sys
from collections import defaultdict


def main():
    text = open(sys.argv[1]).read()
    mesh = re.search(r'dist\.mesh @world\(axes = \[([^\]]*)\], shape = \[([^\]]*)\]\)', text)
    axes = [a.strip().strip('"') for a in mesh.group(1).split(",")]
    shape = [int(s) for s in mesh.group(2).split(",")]
    size = 1
    for s in shape:
        size *= s
    micro = int(re.search(r"dist\.pipeline .* microbatches = (\d+)", text).group(1))

    def coords(rank):
        out = []
        for n in reversed(shape):
            out.append(rank % n)
            rank //= n
        return list(reversed(out))

    def group(ax):
        g = 1
        for a in ax:
            g *= shape[axes.index(a)]
        return g

    # Each chunk: stage, blocks, its template's and boundary's communication.
    chunks = []
    for m in re.finditer(r"dist\.chunk @\S+ of @\S+ stage = (\d+) chunk = \d+ first_block = \d+ blocks = (\d+) \{(.*?)\n  \}\n", text, re.S):
        stage, blocks, body = int(m.group(1)), int(m.group(2)), m.group(3)
        ops = []
        for line in body.split("\n"):
            op = re.search(r"dist\.(all_reduce|reduce_scatter|all_gather|p2p) ", line)
            if not op:
                continue
            ident = re.search(r'id = "([^"]+)"', line).group(1)
            bytes_ = int(re.search(r"bytes = (\d+)", line).group(1))
            ax = re.search(r"axes \[([^\]]*)\]", line)
            ax = [a.strip().strip('"') for a in ax.group(1).split(",")] if ax else []
            ends = re.search(r'along "(\w+)" from (\d+) to (\d+)', line)
            once = "phase = optimizer" in line
            ops.append((op.group(1), ident, ax, bytes_, ends and (int(ends.group(2)), int(ends.group(3))), once))
        chunks.append((stage, blocks, ops))

    pp = axes.index("pp")
    want = defaultdict(lambda: [0, 0, None, 0])  # (rank, base id) -> calls, bytes, kind, group
    for rank in range(size):
        c = coords(rank)
        for stage, blocks, ops in chunks:
            for kind, ident, ax, bytes_, ends, once in ops:
                if kind == "p2p":
                    if c[pp] in ends:
                        w = want[(rank, ident)]
                        w[0] += micro
                        w[1] += micro * bytes_
                        w[2], w[3] = "p2p", 2
                    continue
                if c[pp] != stage:
                    continue
                w = want[(rank, ident)]
                if once:
                    w[1] += blocks * bytes_
                else:
                    w[0] += blocks * micro
                    w[1] += blocks * micro * bytes_
                w[2], w[3] = kind, group(ax)

    got = defaultdict(lambda: [0, 0, None, 0])
    for line in sys.stdin:
        m = re.match(r"comm-report: (\d+) (\S+) (\S+) (\d+) (\d+) (\d+) '([^']+)'", line)
        if not m:
            continue
        rank, kind, grp, calls, bytes_, op = int(m.group(1)), m.group(3), int(m.group(4)), int(m.group(5)), int(m.group(6)), m.group(7)
        base = re.sub(r"@mb\d+$", "", op)
        per_gradient = re.search(r"(\.dp\.\w+|\.tp_grad_reduce)\.b\d+\.", base)
        base = re.sub(r"\.b\d+\..*$", "", base) if per_gradient else base
        g = got[(rank, base)]
        g[0] += calls
        g[1] += bytes_
        g[2], g[3] = kind, grp

    bad = 0
    for key in sorted(set(want) | set(got)):
        w, g = want.get(key), got.get(key)
        if w is None or g is None:
            print(f"comm-check: rank {key[0]} op {key[1]}: the program states {w}, the runtime did {g}")
            bad += 1
            continue
        # A once-per-step reduction's calls are per gradient: only its
        # bytes are stated.
        calls_ok = w[0] == 0 and g[0] > 0 or w[0] == g[0]
        if not calls_ok or w[1] != g[1] or w[2] != g[2] or w[3] != g[3]:
            print(f"comm-check: rank {key[0]} op {key[1]}: the program states (calls, bytes, kind, group) {tuple(w)}, the runtime did {tuple(g)}")
            bad += 1
    if bad:
        sys.exit(1)
    print(f"comm-check: {size} ranks, {len(want)} ops match")


if __name__ == "__main__":
    main()
