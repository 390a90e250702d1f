/*===-- blueprint-c/Blueprint.h - Blueprint's C API -------------*- C -*-===*\
|*                                                                            *|
|* Blueprint's dialects (model, dist, plan), passes and non-pass entry points *|
|* for C, C++ and Python (ctypes) hosts, and the entry points of the          *|
|* mlir-opt plugin. The library is libblueprint.so (tools/build-shared.sh),   *|
|* linked against the shared MLIR of the host (libMLIR.so) and the MLIR C API *|
|* library it ships beside itself (libMLIR-C.so).                             *|
|*                                                                            *|
|* Entry points that can fail never abort. The `...WithStatus` ones return a  *|
|* BlueprintStatus and send the reason of a failure to their own error       *|
|* callback (results go to the result callback only); the thread's last      *|
|* message is also kept (blueprintGetLastErrorMessage). The older entry      *|
|* points return MlirLogicalResult (or a null handle) and send results and   *|
|* errors through one callback. Text passed to callbacks is valid only       *|
|* during the call.                                                          *|
\*===----------------------------------------------------------------------===*/

#ifndef BLUEPRINT_C_BLUEPRINT_H
#define BLUEPRINT_C_BLUEPRINT_H

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"
#include "mlir-c/Support.h"

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*===-- Status ------------------------------------------------------------===*/

/// What a `...WithStatus` entry point returns.
typedef enum {
  BLUEPRINT_STATUS_SUCCESS = 0,
  /// A null handle or an out-of-range argument.
  BLUEPRINT_STATUS_INVALID_ARGUMENT = 1,
  /// A spec that does not parse or breaks a rule (docs/SPEC.md).
  BLUEPRINT_STATUS_INVALID_SPEC = 2,
  /// A module that does not verify (the message holds the diagnostics).
  BLUEPRINT_STATUS_INVALID_IR = 3,
  /// The computation could not be done: a system file that cannot be read
  /// or is invalid, a plan that does not fit, a module without a plan, ...
  BLUEPRINT_STATUS_FAILED = 4,
  /// A bug in Blueprint; please report it with the input.
  BLUEPRINT_STATUS_INTERNAL_ERROR = 5,
} BlueprintStatus;

/// The status's name ("BLUEPRINT_STATUS_INVALID_SPEC"), a static string.
MLIR_CAPI_EXPORTED const char *blueprintStatusGetName(BlueprintStatus status);

/// The message of the calling thread's last failed `...WithStatus` call
/// (empty after a success); valid until the thread's next Blueprint call.
MLIR_CAPI_EXPORTED MlirStringRef blueprintGetLastErrorMessage(void);

/*===-- Dialects ----------------------------------------------------------===*/

/// Inserts the `model`, `dist` and `plan` dialects (and `func`, which
/// Blueprint's imports and passes create) into `registry`. Idempotent. Fails on a null registry.
MLIR_CAPI_EXPORTED MlirLogicalResult blueprintRegisterDialects(MlirDialectRegistry registry);

/// Loads the three dialects (and `func`) into `context`. Idempotent. Fails
/// on a null context.
MLIR_CAPI_EXPORTED MlirLogicalResult blueprintLoadDialects(MlirContext context);

/*===-- Passes ------------------------------------------------------------===*/

/// Registers every Blueprint pass by its command-line name in MLIR's global
/// pass registry (for mlirParsePassPipeline and textual pipelines). Only
/// the first call registers; later calls succeed and do nothing.
MLIR_CAPI_EXPORTED MlirLogicalResult blueprintRegisterPasses(void);

/// The number of Blueprint passes, and the command-line name of pass
/// `index` (an empty string reference out of range).
MLIR_CAPI_EXPORTED intptr_t blueprintGetNumPasses(void);
MLIR_CAPI_EXPORTED MlirStringRef blueprintGetPassArgument(intptr_t index);

/// Creates pass `index` (a null pass out of range). The caller owns it
/// until it is added to a pass manager.
MLIR_CAPI_EXPORTED MlirPass blueprintCreatePass(intptr_t index);

/// One constructor per pass, named after its command-line argument.
/// `blueprint-verify`.
MLIR_CAPI_EXPORTED MlirPass mlirCreateBlueprintVerifyPass(void);
/// `model-decompose-transformer`.
MLIR_CAPI_EXPORTED MlirPass mlirCreateBlueprintModelDecomposeTransformerPass(void);
/// `distribute-transformer-training`.
MLIR_CAPI_EXPORTED MlirPass mlirCreateBlueprintDistributeTransformerTrainingPass(void);
/// `dist-unroll-schedule`.
MLIR_CAPI_EXPORTED MlirPass mlirCreateBlueprintDistUnrollSchedulePass(void);
/// `distribute-transformer-inference`.
MLIR_CAPI_EXPORTED MlirPass mlirCreateBlueprintDistributeTransformerInferencePass(void);
/// `plan-transformer-training`.
MLIR_CAPI_EXPORTED MlirPass mlirCreateBlueprintPlanTransformerTrainingPass(void);
/// `plan-transformer-inference`.
MLIR_CAPI_EXPORTED MlirPass mlirCreateBlueprintPlanTransformerInferencePass(void);
/// `check-mesh-strategy`.
MLIR_CAPI_EXPORTED MlirPass mlirCreateBlueprintCheckMeshStrategyPass(void);
/// `check-collective-groups`.
MLIR_CAPI_EXPORTED MlirPass mlirCreateBlueprintCheckCollectiveGroupsPass(void);
/// `check-conservation`.
MLIR_CAPI_EXPORTED MlirPass mlirCreateBlueprintCheckConservationPass(void);
/// `check-pipeline`.
MLIR_CAPI_EXPORTED MlirPass mlirCreateBlueprintCheckPipelinePass(void);
/// `check-recompute`.
MLIR_CAPI_EXPORTED MlirPass mlirCreateBlueprintCheckRecomputePass(void);
/// `dist-async`.
MLIR_CAPI_EXPORTED MlirPass mlirCreateBlueprintDistAsyncPass(void);
/// `dist-canonicalize`.
MLIR_CAPI_EXPORTED MlirPass mlirCreateBlueprintDistCanonicalizePass(void);
/// `lower-dist-to-runtime`.
MLIR_CAPI_EXPORTED MlirPass mlirCreateBlueprintLowerDistToRuntimePass(void);
/// `lower-dist-to-mpi`.
MLIR_CAPI_EXPORTED MlirPass mlirCreateBlueprintLowerDistToMpiPass(void);
/// `dist-sink-waits`.
MLIR_CAPI_EXPORTED MlirPass mlirCreateBlueprintDistSinkWaitsPass(void);
/// `convert-model-to-linalg`.
MLIR_CAPI_EXPORTED MlirPass mlirCreateBlueprintConvertModelToLinalgPass(void);
/// `convert-dist-step-to-linalg`.
MLIR_CAPI_EXPORTED MlirPass mlirCreateBlueprintConvertDistStepToLinalgPass(void);
/// `convert-linalg-matmul-to-kernels`.
MLIR_CAPI_EXPORTED MlirPass mlirCreateBlueprintConvertLinalgMatmulToKernelsPass(void);

/*===-- Entry points that are not passes ---------------------------------===*/

/// Imports a training spec (JSON text, docs/SPEC.md) as a ModelIR module in
/// `context`, loading the dialects, into `*module` (owned by the caller;
/// null on failure, with the reason to `onError`).
MLIR_CAPI_EXPORTED BlueprintStatus blueprintImportTrainingSpecWithStatus(MlirContext context, MlirStringRef specJson,
                                                                         MlirModule *module,
                                                                         MlirStringCallback onError,
                                                                         void *errorUserData);

/// The same, returning a null module and reporting why through `onError`
/// on a malformed spec.
MLIR_CAPI_EXPORTED MlirModule blueprintImportTrainingSpec(MlirContext context, MlirStringRef specJson,
                                                          MlirStringCallback onError, void *userData);

/// The work summary of a module holding a plan or dist program, as JSON,
/// passed to `onResult`; on failure the reason goes to `onError`.
MLIR_CAPI_EXPORTED BlueprintStatus blueprintExportWorkSummaryWithStatus(MlirOperation module,
                                                                        MlirStringCallback onResult,
                                                                        void *resultUserData,
                                                                        MlirStringCallback onError,
                                                                        void *errorUserData);

/// The same with one callback: the JSON, or on failure the reason, goes to
/// `callback`.
MLIR_CAPI_EXPORTED MlirLogicalResult blueprintExportWorkSummary(MlirOperation module, MlirStringCallback callback,
                                                                void *userData);

/// The estimate of a plan on a system profile (a path to a Calculon system
/// file) with the network tier of each parallel axis, as JSON
/// (`blueprint-translate --estimate`) to `onResult`; a plan that does not
/// fit the first memory tier is a failure unless `allowOverCapacity`. The
/// reason of a failure goes to `onError`.
MLIR_CAPI_EXPORTED BlueprintStatus blueprintEstimateWithStatus(MlirOperation module, MlirStringRef systemPath,
                                                               int32_t tpNet, int32_t ppNet, int32_t dpNet,
                                                               bool dpOverlap, bool allowOverCapacity,
                                                               MlirStringCallback onResult, void *resultUserData,
                                                               MlirStringCallback onError, void *errorUserData);

/// The same with one callback for the JSON and the reason of a failure.
MLIR_CAPI_EXPORTED MlirLogicalResult blueprintEstimate(MlirOperation module, MlirStringRef systemPath, int32_t tpNet,
                                                       int32_t ppNet, int32_t dpNet, bool dpOverlap,
                                                       bool allowOverCapacity, MlirStringCallback callback,
                                                       void *userData);

#ifdef __cplusplus
}
#endif

#endif // BLUEPRINT_C_BLUEPRINT_H
