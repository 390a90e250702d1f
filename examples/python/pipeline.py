"""Blueprint from Python through ctypes: import a training spec, run a
pipeline of Blueprint's passes and upstream ones, print the work summary
and the estimate.

Debian ships no MLIR Python bindings (no python3-mlir package for LLVM 22),
so this script talks to the MLIR C API (libMLIR-C.so, built beside
libblueprint.so by tools/build-shared.sh) and Blueprint's C API directly.
Keep the Python side thin: everything happens in the libraries.

Usage: python3 examples/python/pipeline.py LIBDIR SPEC.json SYSTEM.json
"""
import ctypes
import os
import sys


class StringRef(ctypes.Structure):
    _fields_ = [("data", ctypes.c_char_p), ("length", ctypes.c_size_t)]


class Handle(ctypes.Structure):
    _fields_ = [("ptr", ctypes.c_void_p)]


class LogicalResult(ctypes.Structure):
    _fields_ = [("value", ctypes.c_int8)]


StringCallback = ctypes.CFUNCTYPE(None, StringRef, ctypes.c_void_p)


def string_ref(text):
    data = text.encode()
    return StringRef(data, len(data))


def main():
    libdir, spec_path, system_path = sys.argv[1:4]
    capi = ctypes.CDLL(os.path.join(libdir, "libMLIR-C.so"), mode=ctypes.RTLD_GLOBAL)
    bp = ctypes.CDLL(os.path.join(libdir, "libblueprint.so"))
    signatures = {
        (capi, "mlirContextCreate"): ([], Handle),
        (capi, "mlirContextDestroy"): ([Handle], None),
        (capi, "mlirRegisterAllPasses"): ([], None),
        (capi, "mlirModuleGetOperation"): ([Handle], Handle),
        (capi, "mlirModuleDestroy"): ([Handle], None),
        (capi, "mlirPassManagerCreate"): ([Handle], Handle),
        (capi, "mlirPassManagerDestroy"): ([Handle], None),
        (capi, "mlirPassManagerGetAsOpPassManager"): ([Handle], Handle),
        (capi, "mlirOpPassManagerAddPipeline"): ([Handle, StringRef, StringCallback, ctypes.c_void_p], LogicalResult),
        (capi, "mlirPassManagerRunOnOp"): ([Handle, Handle], LogicalResult),
        (bp, "blueprintLoadDialects"): ([Handle], LogicalResult),
        (bp, "blueprintRegisterPasses"): ([], LogicalResult),
        (bp, "blueprintImportTrainingSpec"): ([Handle, StringRef, StringCallback, ctypes.c_void_p], Handle),
        (bp, "blueprintExportWorkSummary"): ([Handle, StringCallback, ctypes.c_void_p], LogicalResult),
        (bp, "blueprintEstimate"): ([Handle, StringRef, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.c_bool,
                                     ctypes.c_bool, StringCallback, ctypes.c_void_p], LogicalResult),
    }
    for (lib, name), (args, result) in signatures.items():
        function = getattr(lib, name)
        function.argtypes, function.restype = args, result

    out = []
    collect = StringCallback(lambda text, _: out.append(ctypes.string_at(text.data, text.length).decode()))

    def check(result, what):
        if not result.value:
            sys.exit(f"pipeline.py: {what} failed: {''.join(out)}")

    context = capi.mlirContextCreate()
    capi.mlirRegisterAllPasses()  # upstream passes (canonicalize)
    check(bp.blueprintLoadDialects(context), "loading the dialects")
    check(bp.blueprintRegisterPasses(), "registering the passes")
    check(LogicalResult(int(not bp.blueprintLoadDialects(Handle(None)).value)), "rejecting a null context")
    module = bp.blueprintImportTrainingSpec(context, string_ref(open(spec_path).read()), collect, None)
    if not module.ptr:
        sys.exit(f"pipeline.py: import failed: {''.join(out)}")
    pm = capi.mlirPassManagerCreate(context)
    pipeline = "distribute-transformer-training,plan-transformer-training,check-conservation,canonicalize"
    check(capi.mlirOpPassManagerAddPipeline(capi.mlirPassManagerGetAsOpPassManager(pm), string_ref(pipeline), collect, None),
          "parsing the pipeline")
    op = capi.mlirModuleGetOperation(module)
    check(capi.mlirPassManagerRunOnOp(pm, op), "running the pipeline")
    check(bp.blueprintExportWorkSummary(op, collect, None), "the work summary")
    check(bp.blueprintEstimate(op, string_ref(system_path), 0, 1, 1, False, False, collect, None), "the estimate")
    sys.stdout.write("".join(out))
    capi.mlirPassManagerDestroy(pm)
    capi.mlirModuleDestroy(module)
    capi.mlirContextDestroy(context)


main()
