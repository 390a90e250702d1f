// Registers Blueprint's passes by name in MLIR's global pass registry, so
// textual pipelines (mlir-opt --pass-pipeline, mlirParsePassPipeline) find
// them. The C API cannot do this; the passes themselves are Rust external
// passes created through `blueprintCreatePass`.
#include "mlir-c/Pass.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

#include <memory>

extern "C" MlirPass blueprintCreatePass(intptr_t index);

extern "C" void blueprint_register_pass_by_index(intptr_t index) {
  mlir::registerPass([index]() -> std::unique_ptr<mlir::Pass> {
    MlirPass pass = blueprintCreatePass(index);
    return std::unique_ptr<mlir::Pass>(static_cast<mlir::Pass *>(pass.ptr));
  });
}
