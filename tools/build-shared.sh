#!/usr/bin/env bash
# Builds libblueprint.so: Blueprint's dialects, passes, C API and mlir-opt
# plugin, linked against Debian's shared MLIR (libMLIR.so), the one stock
# mlir-opt and other hosts load, so a host process holds one MLIR.
# Debian ships the MLIR C API only as static archives; this also builds
# libMLIR-C.so from them, beside libblueprint.so.
#
# Usage: tools/build-shared.sh [--release]   (prints the library's path)
# Output: target/shared/lib/{libblueprint.so,libMLIR-C.so}
set -euo pipefail
cd "$(dirname "$0")/.."
profile=debug
cargo_profile=()
if [ "${1:-}" = "--release" ]; then
  profile=release
  cargo_profile=(--release)
fi
llvm=/usr/lib/llvm-22
out=$PWD/target/shared/lib
mkdir -p "$out"

capi=$out/libMLIR-C.so
if [ ! -e "$capi" ] || [ -n "$(find "$llvm/lib" -maxdepth 1 -name 'libMLIRCAPI*.a' -newer "$capi" -print -quit)" ]; then
  echo "build-shared: linking $capi from $llvm/lib/libMLIRCAPI*.a" >&2
  "$llvm/bin/clang++" -shared -o "$capi.tmp" -Wl,-soname,libMLIR-C.so \
    -Wl,--whole-archive "$llvm"/lib/libMLIRCAPI*.a -Wl,--no-whole-archive \
    -L"$llvm/lib" -lMLIR -lLLVM -Wl,-rpath,"$llvm/lib"
  mv "$capi.tmp" "$capi"
fi

# A separate target directory: linking MLIR shared changes every crate
# that links it, and must not disturb the static build of the tools.
MLIR_SYS_LINK_SHARED=1 \
RUSTFLAGS="-L native=$out -C link-arg=-Wl,-rpath,$out:$llvm/lib" \
  cargo rustc --quiet "${cargo_profile[@]}" --lib --crate-type staticlib --target-dir target/shared >&2
archive=target/shared/$profile/libblueprint.a

# Link the shared library ourselves rather than as a Rust cdylib: rustc's
# version script would hide the C++ template instances (TypeIDs of traits
# and interfaces) the dialects share with libMLIR.so, leaving the plugin
# its own copies, and a host's ops would then fail trait checks such as
# "symbol's parent must have the SymbolTable trait". Exported, they bind
# to libMLIR.so's at load time. `-u` pulls in every C API entry point.
entry_points=$(nm --defined-only -g "$archive" 2>/dev/null \
  | awk '$2 == "T" && ($3 ~ /^blueprint[A-Z]/ || $3 ~ /^mlirCreateBlueprint/ || $3 ~ /^mlirGet(Pass|Dialect)PluginInfo$/) { print "-Wl,-u," $3 }' \
  | sort -u)
if [ -z "$entry_points" ]; then
  echo "build-shared: no C API entry points in $archive" >&2
  exit 1
fi
# shellcheck disable=SC2086
"$llvm/bin/clang++" -shared -o "$out/libblueprint.so.tmp" -Wl,-soname,libblueprint.so $entry_points "$archive" \
  -L"$out" -lMLIR-C -L"$llvm/lib" -lMLIR -lLLVM -lstdc++ -lm -ldl -lpthread -lz -lzstd \
  -Wl,-rpath,"$out:$llvm/lib"
mv "$out/libblueprint.so.tmp" "$out/libblueprint.so"
echo "$out/libblueprint.so"
