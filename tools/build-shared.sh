#!/usr/bin/env bash
# Builds libblueprint.so: Blueprint's dialects, passes, C API and mlir-opt
# plugin, linked against Debian's shared MLIR (libMLIR.so), the one stock
# mlir-opt and other hosts load, so a host process holds one MLIR.
# Debian ships the MLIR C API only as static archives; this also builds
# libMLIR-C.so from them, beside libblueprint.so.
#
# Usage: tools/build-shared.sh [--release] [--prefix DIR [--no-build]]
#   Prints the built library's path (the installed one with --prefix).
#   --no-build installs the profile's library as last built, without
#   building (an error if there is none).
# Output: target/shared/{debug,release}/lib/{libblueprint.so,libMLIR-C.so},
#   one folder per profile. Both libraries find each other through a
#   relocatable RUNPATH ($ORIGIN) and Debian's libMLIR.so in its system
#   folder, so the folder can be moved or installed anywhere.
# --prefix DIR installs into DIR:
#   lib/libblueprint.so, lib/libMLIR-C.so
#   include/blueprint-c/Blueprint.h
#   lib/pkgconfig/blueprint.pc            (pkg-config --cflags --libs blueprint)
#   lib/cmake/Blueprint/BlueprintConfig.cmake (find_package(Blueprint);
#                                          target Blueprint::blueprint)
# The .pc and CMake files locate the prefix from where they are, so the
# installed tree is relocatable too.
set -euo pipefail
script=$(readlink -f "$0")
cd "$(dirname "$script")/.."
profile=debug
cargo_profile=()
prefix=""
build=1
while (($#)); do
  case "$1" in
    --release)
      profile=release
      cargo_profile=(--release)
      ;;
    --prefix)
      [ $# -ge 2 ] || { echo "build-shared: --prefix needs a directory" >&2; exit 2; }
      prefix=$2
      shift
      ;;
    --prefix=*) prefix=${1#--prefix=} ;;
    --no-build) build=0 ;;
    -h | --help)
      sed -n '2,23p' "$script" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "build-shared: unknown argument '$1' (usage: tools/build-shared.sh [--release] [--prefix DIR [--no-build]])" >&2
      exit 2
      ;;
  esac
  shift
done
if [ "$build" = 0 ] && [ -z "$prefix" ]; then
  echo "build-shared: --no-build only applies to --prefix" >&2
  exit 2
fi
llvm=/usr/lib/llvm-22
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
capi_dir=$PWD/target/shared/capi
out=$PWD/target/shared/$profile/lib
if [ "$build" = 0 ]; then
  for library in libblueprint.so libMLIR-C.so; do
    [ -e "$out/$library" ] || { echo "build-shared: --no-build, but there is no $out/$library (run tools/build-shared.sh${cargo_profile:+ ${cargo_profile[*]}} first)" >&2; exit 1; }
  done
fi
mkdir -p "$capi_dir" "$out"

build_libraries() {
# libMLIR-C.so, the same for both profiles: linked once, copied beside each
# libblueprint.so.
capi=$capi_dir/libMLIR-C.so
if [ ! -e "$capi" ] || [ -n "$(find "$llvm/lib" -maxdepth 1 -name 'libMLIRCAPI*.a' -newer "$capi" -print -quit)" ]; then
  echo "build-shared: linking $capi from $llvm/lib/libMLIRCAPI*.a" >&2
  "$llvm/bin/clang++" -shared -o "$capi.tmp" -Wl,-soname,libMLIR-C.so \
    -Wl,--whole-archive "$llvm"/lib/libMLIRCAPI*.a -Wl,--no-whole-archive \
    -L"$llvm/lib" -lMLIR -lLLVM -Wl,--enable-new-dtags,-rpath,"\$ORIGIN:$llvm/lib"
  mv "$capi.tmp" "$capi"
fi
if [ ! -e "$out/libMLIR-C.so" ] || [ "$capi" -nt "$out/libMLIR-C.so" ]; then
  cp -p "$capi" "$out/libMLIR-C.so.tmp"
  mv "$out/libMLIR-C.so.tmp" "$out/libMLIR-C.so"
fi

# A separate target directory: linking MLIR shared changes every crate
# that links it, and must not disturb the static build of the tools.
echo "build-shared: building the $profile static library (target/shared/$profile; the first build takes several minutes)" >&2
MLIR_SYS_LINK_SHARED=1 \
RUSTFLAGS="-L native=$capi_dir" \
  cargo rustc "${cargo_profile[@]}" --lib --crate-type staticlib --target-dir target/shared >&2
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
if [ ! -e "$out/libblueprint.so" ] || [ "$archive" -nt "$out/libblueprint.so" ] || [ "$script" -nt "$out/libblueprint.so" ]; then
  echo "build-shared: linking $out/libblueprint.so" >&2
  # shellcheck disable=SC2086
  "$llvm/bin/clang++" -shared -o "$out/libblueprint.so.tmp" -Wl,-soname,libblueprint.so $entry_points "$archive" \
    -L"$out" -lMLIR-C -L"$llvm/lib" -lMLIR -lLLVM -lstdc++ -lm -ldl -lpthread -lz -lzstd \
    -Wl,--enable-new-dtags,-rpath,"\$ORIGIN:$llvm/lib"
  mv "$out/libblueprint.so.tmp" "$out/libblueprint.so"
fi

}
if [ "$build" = 1 ]; then
  build_libraries
fi

if [ -z "$prefix" ]; then
  echo "$out/libblueprint.so"
  exit 0
fi

# Install.
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
echo "build-shared: installing into $prefix" >&2
install -d "$prefix/lib" "$prefix/include/blueprint-c" "$prefix/lib/pkgconfig" "$prefix/lib/cmake/Blueprint"
install -m 0755 "$out/libblueprint.so" "$out/libMLIR-C.so" "$prefix/lib/"
install -m 0644 include/blueprint-c/Blueprint.h "$prefix/include/blueprint-c/"

cat > "$prefix/lib/pkgconfig/blueprint.pc" <<EOF
# Blueprint's C API (include/blueprint-c/Blueprint.h) and mlir-opt plugin,
# against Debian's LLVM/MLIR 22. Relocatable: the prefix is where this
# file is, two folders up.
prefix=\${pcfiledir}/../..
libdir=\${prefix}/lib
includedir=\${prefix}/include
llvm_includedir=$llvm/include

Name: blueprint
Description: Blueprint: MLIR dialects and passes for distributed Transformer plans (C API)
Version: $version
Cflags: -I\${includedir} -I\${llvm_includedir}
Libs: -L\${libdir} -lblueprint -lMLIR-C
EOF

cat > "$prefix/lib/cmake/Blueprint/BlueprintConfig.cmake" <<EOF
# find_package(Blueprint) for Blueprint's C API: the imported target
# Blueprint::blueprint (libblueprint.so with libMLIR-C.so beside it, the
# header and MLIR's C headers). Relocatable: the prefix is found from this
# file's folder.
get_filename_component(_blueprint_prefix "\${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(Blueprint_VERSION "$version")
set(BLUEPRINT_INCLUDE_DIRS "\${_blueprint_prefix}/include" "$llvm/include")
set(BLUEPRINT_LIBRARY_DIR "\${_blueprint_prefix}/lib")
if(NOT TARGET Blueprint::MLIR-C)
  add_library(Blueprint::MLIR-C SHARED IMPORTED)
  set_target_properties(Blueprint::MLIR-C PROPERTIES
    IMPORTED_LOCATION "\${_blueprint_prefix}/lib/libMLIR-C.so"
    IMPORTED_SONAME "libMLIR-C.so")
endif()
if(NOT TARGET Blueprint::blueprint)
  add_library(Blueprint::blueprint SHARED IMPORTED)
  set_target_properties(Blueprint::blueprint PROPERTIES
    IMPORTED_LOCATION "\${_blueprint_prefix}/lib/libblueprint.so"
    IMPORTED_SONAME "libblueprint.so"
    INTERFACE_INCLUDE_DIRECTORIES "\${BLUEPRINT_INCLUDE_DIRS}"
    INTERFACE_LINK_LIBRARIES Blueprint::MLIR-C)
endif()
set(Blueprint_FOUND TRUE)
unset(_blueprint_prefix)
EOF

cat > "$prefix/lib/cmake/Blueprint/BlueprintConfigVersion.cmake" <<EOF
set(PACKAGE_VERSION "$version")
if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
EOF
echo "$prefix/lib/libblueprint.so"
