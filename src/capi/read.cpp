// Reading an op's attributes as the array MLIR keeps, instead of one C API
// call per attribute (mlirOperationGetAttribute): every pass reads every
// attribute of every task at least once.
#include "mlir-c/IR.h"
#include "mlir/CAPI/IR.h"
#include "mlir/IR/Operation.h"

using namespace mlir;

static_assert(sizeof(NamedAttribute) == sizeof(MlirNamedAttribute),
              "a NamedAttribute is a name handle and a value handle, as the C API's");

// The op's attributes (what mlirOperationGetAttribute(op, i) returns for
// each i), valid until the op's attributes change.
extern "C" const MlirNamedAttribute *blueprintOperationGetAttributes(MlirOperation op, intptr_t *count) {
  ArrayRef<NamedAttribute> attributes = unwrap(op)->getAttrs();
  *count = static_cast<intptr_t>(attributes.size());
  return reinterpret_cast<const MlirNamedAttribute *>(attributes.data());
}
