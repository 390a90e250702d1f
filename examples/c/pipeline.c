// Blueprint from C: import a training spec, run Blueprint's passes and an
// upstream one through a textual pipeline, print the plan's work summary
// and its estimate on a system. Results go to stdout, errors (with their
// status) to stderr.
//
// Build (tools/build-shared.sh first):
//   /usr/lib/llvm-22/bin/clang -Iinclude -I/usr/lib/llvm-22/include examples/c/pipeline.c \
//     -Ltarget/shared/debug/lib -lblueprint -lMLIR-C -Wl,-rpath,$PWD/target/shared/debug/lib -o pipeline
//   (or, after tools/build-shared.sh --prefix DIR:
//    /usr/lib/llvm-22/bin/clang examples/c/pipeline.c $(PKG_CONFIG_PATH=DIR/lib/pkgconfig pkg-config --cflags --libs blueprint) \
//      -Wl,-rpath,DIR/lib -o pipeline)
// Run: ./pipeline SPEC.json SYSTEM.json
#include "blueprint-c/Blueprint.h"

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"
#include "mlir-c/RegisterEverything.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_to(MlirStringRef text, void *stream) { fwrite(text.data, 1, text.length, (FILE *)stream); }

// An error callback: the reason on stderr, after what failed.
static void print_error(MlirStringRef text, void *what) {
  fprintf(stderr, "pipeline: %s failed: %.*s\n", (const char *)what, (int)text.length, text.data);
}

// The status of a failed call on stderr; whether it succeeded.
static int succeeded(BlueprintStatus status) {
  if (status == BLUEPRINT_STATUS_SUCCESS)
    return 1;
  fprintf(stderr, "pipeline: status %s\n", blueprintStatusGetName(status));
  return 0;
}

static char *read_file(const char *path) {
  FILE *file = fopen(path, "rb");
  if (!file) {
    fprintf(stderr, "pipeline: cannot read %s\n", path);
    return NULL;
  }
  fseek(file, 0, SEEK_END);
  long size = ftell(file);
  fseek(file, 0, SEEK_SET);
  char *text = malloc(size + 1);
  size_t got = fread(text, 1, size, file);
  text[got] = 0;
  fclose(file);
  return text;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: pipeline SPEC.json SYSTEM.json\n");
    return 2;
  }
  char *spec = read_file(argv[1]);
  if (!spec)
    return 1;

  // Upstream dialects and passes (canonicalize), then Blueprint's.
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirRegisterAllDialects(registry);
  if (mlirLogicalResultIsFailure(blueprintRegisterDialects(registry)))
    return 1;
  MlirContext context = mlirContextCreate();
  mlirContextAppendDialectRegistry(context, registry);
  mlirDialectRegistryDestroy(registry);
  mlirRegisterAllPasses();
  if (mlirLogicalResultIsFailure(blueprintLoadDialects(context)) ||
      mlirLogicalResultIsFailure(blueprintRegisterPasses()))
    return 1;
  // A null context is an error, not a crash.
  if (!mlirLogicalResultIsFailure(blueprintLoadDialects((MlirContext){NULL})))
    return 1;

  MlirModule module;
  BlueprintStatus imported = blueprintImportTrainingSpecWithStatus(context, mlirStringRefCreateFromCString(spec), &module,
                                                                   print_error, "import");
  free(spec);
  if (!succeeded(imported))
    return 1;

  // Blueprint's passes by constructor and by name, with upstream canonicalize.
  MlirPassManager pm = mlirPassManagerCreate(context);
  MlirOpPassManager top = mlirPassManagerGetAsOpPassManager(pm);
  mlirPassManagerAddOwnedPass(pm, mlirCreateBlueprintDistributeTransformerTrainingPass());
  MlirLogicalResult parsed = mlirOpPassManagerAddPipeline(
      top, mlirStringRefCreateFromCString("plan-transformer-training,check-conservation,canonicalize"), print_to, stderr);
  if (mlirLogicalResultIsFailure(parsed))
    return 1;
  MlirOperation op = mlirModuleGetOperation(module);
  if (mlirLogicalResultIsFailure(mlirPassManagerRunOnOp(pm, op))) {
    fprintf(stderr, "pipeline: the pass pipeline failed\n");
    return 1;
  }
  printf("passes: %ld Blueprint passes registered\n", (long)blueprintGetNumPasses());
  if (!succeeded(blueprintExportWorkSummaryWithStatus(op, print_to, stdout, print_error, "the work summary")))
    return 1;
  BlueprintStatus estimated = blueprintEstimateWithStatus(op, mlirStringRefCreateFromCString(argv[2]), 0, 1, 1, false,
                                                          false, print_to, stdout, print_error, "the estimate");
  mlirPassManagerDestroy(pm);
  mlirModuleDestroy(module);
  mlirContextDestroy(context);
  return succeeded(estimated) ? 0 : 1;
}
