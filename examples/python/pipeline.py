"""Blueprint from Python through ctypes: import a training spec, run a
pipeline of Blueprint's passes and upstream ones, print the work summary
and the estimate.

Debian ships no MLIR Python bindings (no python3-mlir package for LLVM 22),
so this script talks to the MLIR C API (libMLIR-C.so, built beside
libblueprint.so by tools/build-shared.sh) and Blueprint's C API directly.
Keep the Python side thin: everything happens in the libraries.

Results go to stdout; an error goes to stderr with its status
(BLUEPRINT_STATUS_...) and the script exits 1.

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
        (bp, "blueprintImportTrainingSpecWithStatus"): ([Handle, StringRef, ctypes.POINTER(Handle), StringCallback,
                                                         ctypes.c_void_p], ctypes.c_int),
        (bp, "blueprintExportWorkSummaryWithStatus"): ([Handle, StringCallback, ctypes.c_void_p, StringCallback,
                                                        ctypes.c_void_p], ctypes.c_int),
        (bp, "blueprintEstimateWithStatus"): ([Handle, StringRef, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32,
                                               ctypes.c_bool, ctypes.c_bool, StringCallback, ctypes.c_void_p,
                                               StringCallback, ctypes.c_void_p], ctypes.c_int),
        (bp, "blueprintStatusGetName"): ([ctypes.c_int], ctypes.c_char_p),
    }
    for (lib, name), (args, result) in signatures.items():
        function = getattr(lib, name)
        function.argtypes, function.restype = args, result

    out = []
    errors = []
    collect = StringCallback(lambda text, _: out.append(ctypes.string_at(text.data, text.length).decode()))
    collect_error = StringCallback(
        lambda text, _: errors.append(ctypes.string_at(text.data, text.length).decode(errors="replace")))

    def fail(what, status=None):
        name = f" ({bp.blueprintStatusGetName(status).decode()})" if status is not None else ""
        sys.stderr.write(f"pipeline.py: {what} failed{name}: {''.join(errors)}\n")
        sys.exit(1)

    def check(result, what):
        if not result.value:
            fail(what)

    def check_status(status, what):
        if status != 0:
            fail(what, status)

    context = capi.mlirContextCreate()
    capi.mlirRegisterAllPasses()  # upstream passes (canonicalize)
    check(bp.blueprintLoadDialects(context), "loading the dialects")
    check(bp.blueprintRegisterPasses(), "registering the passes")
    check(LogicalResult(int(not bp.blueprintLoadDialects(Handle(None)).value)), "rejecting a null context")
    module = Handle(None)
    check_status(bp.blueprintImportTrainingSpecWithStatus(context, string_ref(open(spec_path).read()),
                                                          ctypes.byref(module), collect_error, None), "the import")
    pm = capi.mlirPassManagerCreate(context)
    pipeline = "distribute-transformer-training,plan-transformer-training,check-conservation,canonicalize"
    check(capi.mlirOpPassManagerAddPipeline(capi.mlirPassManagerGetAsOpPassManager(pm), string_ref(pipeline),
                                            collect_error, None), "parsing the pipeline")
    op = capi.mlirModuleGetOperation(module)
    check(capi.mlirPassManagerRunOnOp(pm, op), "running the pipeline")
    check_status(bp.blueprintExportWorkSummaryWithStatus(op, collect, None, collect_error, None), "the work summary")
    check_status(bp.blueprintEstimateWithStatus(op, string_ref(system_path), 0, 1, 1, False, False, collect, None,
                                                collect_error, None), "the estimate")
    sys.stdout.write("".join(out))
    capi.mlirPassManagerDestroy(pm)
    capi.mlirModuleDestroy(module)
    capi.mlirContextDestroy(context)


main()
