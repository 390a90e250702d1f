// Reading an op's attributes as the array MLIR keeps, instead of one C API
// call per attribute (mlirOperationGetAttribute): every pass reads every
// attribute of every task at least once.
#include "mlir-c/IR.h"
#include "mlir/CAPI/IR.h"
#include "mlir/IR/Operation.h"

#include <vector>

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

// Every op under `root` (itself included) in pre-order, as
// mlirOperationWalk visits them, handed to `sink` in one call: a Rust
// callback per op cost more than the walk.
// (Operation::walk calls back through a function_ref per op; the
// recursion below visits the same ops in the same order.)
static void collectOps(Operation *op, std::vector<Operation *> &ops) {
  ops.push_back(op);
  for (Region &region : op->getRegions())
    for (Block &block : region)
      for (Operation &nested : block)
        collectOps(&nested, ops);
}

extern "C" void blueprintCollectOps(MlirOperation root, void (*sink)(void *, const MlirOperation *, intptr_t), void *data) {
  std::vector<Operation *> ops;
  ops.reserve(256);
  collectOps(unwrap(root), ops);
  static_assert(sizeof(Operation *) == sizeof(MlirOperation), "an op handle is the op's address");
  sink(data, reinterpret_cast<const MlirOperation *>(ops.data()), static_cast<intptr_t>(ops.size()));
}
