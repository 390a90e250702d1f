// Creating an op from Blueprint's typed builders. The C API's
// mlirOperationCreate looks the op name up by string, appends each
// attribute to a NamedAttrList (comparing names to track sortedness),
// then sorts, checks for duplicates and uniques the dictionary. The
// generated builders already hold the name's handle and emit their
// attributes in name order, once each, so this goes straight to the
// uniqued dictionary and the op.
#include "mlir-c/IR.h"
#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/SmallVector.h"

using namespace mlir;

// The handle of an op name (registered or not), valid as long as the
// context.
extern "C" const void *blueprintOperationNameGet(MlirContext context, MlirStringRef name) {
  return OperationName(unwrap(name), unwrap(context)).getAsOpaquePointer();
}

// `attributes` must be sorted by name and free of duplicates (the
// generated builders emit them so); regions are taken over, as
// mlirOperationCreate does.
extern "C" MlirOperation blueprintOperationCreate(MlirLocation location, const void *name, intptr_t nResults,
                                                  const MlirType *results, intptr_t nOperands,
                                                  const MlirValue *operands, intptr_t nAttributes,
                                                  const MlirNamedAttribute *attributes, intptr_t nRegions,
                                                  MlirRegion *regions) {
  Location loc = unwrap(location);
  MLIRContext *context = loc.getContext();
  OperationName opName = OperationName::getFromOpaquePointer(name);
  llvm::SmallVector<NamedAttribute, 24> named;
  named.reserve(nAttributes);
  for (intptr_t i = 0; i < nAttributes; ++i)
    named.emplace_back(unwrap(attributes[i].name), unwrap(attributes[i].attribute));
  llvm::SmallVector<Type, 4> types;
  types.reserve(nResults);
  for (intptr_t i = 0; i < nResults; ++i)
    types.push_back(unwrap(results[i]));
  llvm::SmallVector<Value, 8> values;
  values.reserve(nOperands);
  for (intptr_t i = 0; i < nOperands; ++i)
    values.push_back(unwrap(operands[i]));
  Operation *op;
  if (opName.getOpPropertyByteSize() != 0) {
    // Ops keeping inherent attributes as properties take them from the
    // state (Blueprint's dialects do not; upstream ones may).
    OperationState state(loc, opName);
    state.addTypes(types);
    state.addOperands(values);
    state.addAttributes(named);
    for (intptr_t i = 0; i < nRegions; ++i)
      state.addRegion(std::unique_ptr<Region>(unwrap(regions[i])));
    op = Operation::create(state);
  } else {
    DictionaryAttr dictionary = DictionaryAttr::getWithSorted(context, named);
    op = Operation::create(loc, opName, types, values, dictionary, /*properties=*/nullptr, /*successors=*/{},
                           static_cast<unsigned>(nRegions));
    for (intptr_t i = 0; i < nRegions; ++i) {
      std::unique_ptr<Region> owned(unwrap(regions[i]));
      op->getRegion(static_cast<unsigned>(i)).takeBody(*owned);
    }
  }
  return wrap(op);
}
