#!/usr/bin/env python3
"""Runs the README's commands whose output the README shows, and compares.

Usage: readme_check.py README.md WORKDIR

A block of expected output follows a line `<!-- readme-check: NAME -->`;
the command that prints it is the first command (backslash continuations
joined) of the README's code block before that line. The command runs in
WORKDIR, where `test` links to the repository's test/ (so the README's
relative paths work and its output files land in WORKDIR), with the tools
on PATH. Wall-clock times (`; 0.101 s`) are the only thing allowed to
differ.
"""
import os
import re
import subprocess
import sys

WALL = re.compile(r"; \d+(\.\d+)? s\b")


def blocks(lines):
    """(first line index, lines) of each indented code block."""
    out, i = [], 0
    while i < len(lines):
        if lines[i].startswith("    ") and (i == 0 or not lines[i - 1].strip()):
            start, body = i, []
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                body.append(lines[i][4:])
                i += 1
            while body and not body[-1].strip():
                body.pop()
            out.append((start, body))
        else:
            i += 1
    return out


def main():
    readme, work = sys.argv[1:3]
    repo = os.path.dirname(os.path.abspath(readme))
    os.makedirs(work, exist_ok=True)
    link = os.path.join(work, "test")
    if not os.path.exists(link):
        os.symlink(os.path.join(repo, "test"), link)
    lines = open(readme).read().splitlines()
    code = blocks(lines)
    checked, failed = 0, 0
    for at, line in enumerate(lines):
        marker = re.match(r"<!-- readme-check: (.*) -->", line.strip())
        if not marker:
            continue
        name = marker.group(1)
        before = [b for b in code if b[0] < at]
        after = [b for b in code if b[0] > at]
        assert len(before) >= 2 and after, f"{name}: no command block before or output block after the marker"
        # The block right before the marker's paragraph holds the command.
        command_block = before[-1][1]
        command = []
        for text in command_block:
            command.append(text.rstrip("\\").strip())
            if not text.rstrip().endswith("\\"):
                break
        command = " ".join(command)
        expected = after[0][1]
        run = subprocess.run(command, shell=True, cwd=work, capture_output=True, text=True)
        got = run.stdout.rstrip("\n").splitlines()
        mask = lambda ls: [WALL.sub("; <wall> s", l.rstrip()) for l in ls]
        if run.returncode != 0 or mask(got) != mask(expected):
            failed += 1
            print(f"{name}: the README's output differs from `{command}` (exit {run.returncode}):")
            for a, b in zip(mask(expected) + [""] * len(got), mask(got) + [""] * len(expected)):
                if a != b:
                    print(f"  README: {a}\n  now:    {b}")
            print(run.stderr)
        else:
            print(f"{name}: the README's output is the command's")
        checked += 1
    print(f"{checked - failed} of {checked} README outputs match their commands")


main()
