// The C API's error channel: each `...WithStatus` entry point returns a
// status, sends results to its result callback only and the reason of a
// failure to its error callback only (and keeps it as the thread's last
// error); the older one-callback entry points still work.
#include "blueprint-c/Blueprint.h"

#include "mlir-c/IR.h"
#include "mlir-c/RegisterEverything.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int results, errors;
static char first_error[256];

static void on_result(MlirStringRef text, void *data) {
  (void)text;
  (void)data;
  ++results;
}

static void on_error(MlirStringRef text, void *data) {
  (void)data;
  if (errors++ == 0) {
    size_t n = text.length < sizeof first_error - 1 ? text.length : sizeof first_error - 1;
    memcpy(first_error, text.data, n);
    first_error[n] = 0;
    char *newline = strchr(first_error, '\n');
    if (newline)
      *newline = 0;
  }
}

static void report(const char *what, BlueprintStatus status) {
  MlirStringRef last = blueprintGetLastErrorMessage();
  int same = errors == 0 ? last.length == 0 : strncmp(last.data, first_error, strlen(first_error)) == 0;
  printf("%s: %s results=%d errors=%d last-error-matches=%d: %s\n", what, blueprintStatusGetName(status), results, errors,
         same, errors ? first_error : "");
  results = errors = 0;
  first_error[0] = 0;
}

static void print_to(MlirStringRef text, void *stream) { fwrite(text.data, 1, text.length, (FILE *)stream); }

static char *read_file(const char *path) {
  FILE *file = fopen(path, "rb");
  if (!file)
    return NULL;
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
    fprintf(stderr, "usage: status SPEC.json SYSTEM.json\n");
    return 2;
  }
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirRegisterAllDialects(registry);
  blueprintRegisterDialects(registry);
  MlirContext context = mlirContextCreate();
  mlirContextAppendDialectRegistry(context, registry);
  mlirDialectRegistryDestroy(registry);
  blueprintLoadDialects(context);

  MlirModule module;
  report("null context",
         blueprintImportTrainingSpecWithStatus((MlirContext){NULL}, mlirStringRefCreateFromCString("{}"), &module,
                                               on_error, NULL));
  report("null out-parameter", blueprintImportTrainingSpecWithStatus(
                                   context, mlirStringRefCreateFromCString("{}"), NULL, on_error, NULL));
  report("bad spec", blueprintImportTrainingSpecWithStatus(context, mlirStringRefCreateFromCString("{\"model\": 1}"),
                                                           &module, on_error, NULL));
  printf("module after a failure is null: %d\n", mlirModuleIsNull(module));

  char *spec = read_file(argv[1]);
  if (!spec)
    return 1;
  report("good spec",
         blueprintImportTrainingSpecWithStatus(context, mlirStringRefCreateFromCString(spec), &module, on_error, NULL));
  free(spec);
  MlirOperation op = mlirModuleGetOperation(module);
  report("summary of ModelIR", blueprintExportWorkSummaryWithStatus(op, on_result, NULL, on_error, NULL));
  report("summary of a null op",
         blueprintExportWorkSummaryWithStatus((MlirOperation){NULL}, on_result, NULL, on_error, NULL));
  report("estimate, bad tier", blueprintEstimateWithStatus(op, mlirStringRefCreateFromCString(argv[2]), -1, 0, 0,
                                                           false, false, on_result, NULL, on_error, NULL));
  report("estimate, no system file",
         blueprintEstimateWithStatus(op, mlirStringRefCreateFromCString("/nonexistent/system.json"), 0, 0, 0, false,
                                     false, on_result, NULL, on_error, NULL));

  // MLIR's verifier accepts it (parsing verifies); Blueprint's does not.
  MlirModule invalid = mlirModuleCreateParse(context, mlirStringRefCreateFromCString("plan.objective latency"));
  if (mlirModuleIsNull(invalid))
    return 1;
  report("summary of invalid IR", blueprintExportWorkSummaryWithStatus(mlirModuleGetOperation(invalid), on_result,
                                                                       NULL, on_error, NULL));

  // The one-callback entry points: the reason goes to their callback.
  printf("legacy: ");
  fflush(stdout);
  MlirLogicalResult legacy = blueprintExportWorkSummary((MlirOperation){NULL}, print_to, stdout);
  printf("\nlegacy failed: %d\n", mlirLogicalResultIsFailure(legacy));
  printf("unknown status: %s\n", blueprintStatusGetName((BlueprintStatus)42));

  mlirModuleDestroy(invalid);
  mlirModuleDestroy(module);
  mlirContextDestroy(context);
  return 0;
}
