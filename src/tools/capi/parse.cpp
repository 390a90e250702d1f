// Parsing without MLIR's verifier: mlirOperationCreateParse verifies as it
// parses, and some upstream verifiers cost time and memory in what the
// types say, not in the input (tensor.from_elements builds one Type per
// element of its result: 16 GiB for tensor<2147483648xindex>). Blueprint
// parses, checks those bounds (src/ir/input_limits.rs), then verifies.
#include "mlir-c/IR.h"
#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/Parser/Parser.h"

using namespace mlir;

// mlirOperationCreateParse with verifyAfterParse off: the one top-level op
// of `source` (or null, with the diagnostics emitted).
extern "C" MlirOperation blueprintOperationParseUnverified(MlirContext context, MlirStringRef source, MlirStringRef name) {
  ParserConfig config(unwrap(context), /*verifyAfterParse=*/false);
  return wrap(parseSourceString(unwrap(source), config, unwrap(name)).release());
}
