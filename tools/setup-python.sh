#!/usr/bin/env bash
# Creates the Python virtual environment the execution tests' JAX reference
# (test/Execution/reference.py) runs in: $REPO/target/venv, with pinned jax
# (CPU), numpy and safetensors from PyPI. Nothing is installed system-wide.
# Idempotent: when the venv already holds exactly these pins (the marker file
# below records them, and the installed versions are checked against it), pip
# is not run. Interpreter: $PYTHON if set, else python3.
#
# The pins must install on the machine's python3, CPython 3.11: jax and jaxlib
# 0.11 and later need Python >= 3.12, so jax is pinned to 0.10.2, the newest
# release for 3.11 (and numpy to 2.4.6, likewise).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$REPO/target/venv"
PYTHON="${PYTHON:-python3}"
MARKER="$VENV/blueprint-requirements.txt"

REQUIREMENTS="jax[cpu]==0.10.2
jaxlib==0.10.2
numpy==2.4.6
safetensors==0.8.0"
PINS="$(echo "$REQUIREMENTS" | paste -sd" ")"

fail() {
  echo "setup-python: $*" >&2
  exit 1
}

# The installed distributions match the pins (read from package metadata, so
# the check does not import jax and takes a fraction of a second).
installed_matches() {
  [ -x "$VENV/bin/python" ] && [ -f "$MARKER" ] || return 1
  [ "$(cat "$MARKER")" = "$REQUIREMENTS" ] || return 1
  "$VENV/bin/python" - "$MARKER" <<'EOF' 2>/dev/null
import importlib.metadata as metadata, re, sys
for line in open(sys.argv[1]).read().split():
    name, version = re.sub(r"\[.*\]", "", line).split("==")
    if metadata.version(name) != version:
        sys.exit(1)
EOF
}

if installed_matches; then
  echo "setup-python: $VENV already has $PINS"
  exit 0
fi

command -v "$PYTHON" >/dev/null || fail "no '$PYTHON' on PATH (set PYTHON to a CPython 3.11 or later)"
if [ ! -x "$VENV/bin/python" ]; then
  mkdir -p "$REPO/target"
  "$PYTHON" -m venv "$VENV" || fail "'$PYTHON -m venv $VENV' failed (Debian: apt-get install python3-venv)"
fi
rm -f "$MARKER"
echo "$REQUIREMENTS" >"$VENV/requirements.txt"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$VENV/requirements.txt" \
  || fail "pip install into $VENV failed (pins: $PINS)"
"$VENV/bin/python" -c "import jax, numpy, safetensors.numpy; jax.numpy.zeros(1).block_until_ready()" \
  || fail "the venv's jax/numpy/safetensors do not import after install"
echo "$REQUIREMENTS" >"$MARKER"
installed_matches || fail "installed versions in $VENV do not match the pins after install"
echo "setup-python: installed $PINS into $VENV"
