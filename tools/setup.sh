#!/usr/bin/env bash
# Installs everything Blueprint needs to build and test on a fresh Debian
# machine (LLVM/MLIR 22, lit/FileCheck, the libraries mlir-sys links, and
# MPICH for the MPI runtime: blueprint-run under mpirun and its tests).
# Idempotent: installs only what is missing. Needs root (or sudo).
set -euo pipefail

PACKAGES=(
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools libpolly-22-dev
  libclang-22-dev clang-22 libzstd-dev python3 python3-venv python3-jsonschema mpich libmpich-dev pkgconf cmake
)

missing=()
for package in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all Debian packages present"
fi

command -v mpirun >/dev/null || { echo "setup: mpirun (mpich) is missing after install" >&2; exit 1; }

for tool in mlir-opt FileCheck lit not; do
  if [ ! -x "/usr/lib/llvm-22/bin/$tool" ]; then
    echo "setup: /usr/lib/llvm-22/bin/$tool is missing after install" >&2
    exit 1
  fi
done
command -v cargo >/dev/null || { echo "setup: cargo (Rust toolchain) not found" >&2; exit 1; }

# The execution tests' JAX reference, in its own venv (target/venv).
bash "$(dirname "${BASH_SOURCE[0]}")/setup-python.sh"
