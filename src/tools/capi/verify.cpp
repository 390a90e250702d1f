// MLIR's verifier over the ops a building pass appended to a module (a new
// layer), instead of the whole module: the ops before them were verified
// when they were parsed or built and the pass did not touch them.
// mlir::verify on the module would also re-verify those, and the module's
// symbol-table verification walks every symbol user in it.
#include "mlir-c/IR.h"
#include "mlir/CAPI/IR.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/DenseMap.h"

using namespace mlir;

// Verifies `first` and every op after it in its block (recursively), the
// symbol uses inside them, and that the block's symbols stay unique (the
// module's symbol-table rule, which the new ops could break).
extern "C" bool blueprintVerifyAppended(MlirOperation first) {
  Operation *start = unwrap(first);
  Block *block = start->getBlock();
  if (!block)
    return succeeded(verify(start));
  llvm::DenseMap<Attribute, Operation *> symbols;
  bool ok = true;
  for (Operation &op : *block) {
    auto name = op.getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName());
    if (!name || !isa<SymbolOpInterface>(op))
      continue;
    auto [it, inserted] = symbols.try_emplace(name, &op);
    if (!inserted) {
      op.emitError().append("redefinition of symbol named '", name.getValue(), "'")
          .attachNote(it->second->getLoc())
          .append("see existing symbol definition here");
      ok = false;
    }
  }
  if (!ok)
    return false;
  SymbolTableCollection tables;
  for (Operation *op = start; op; op = op->getNextNode()) {
    if (failed(verify(op)))
      return false;
    WalkResult users = op->walk([&](SymbolUserOpInterface user) {
      return failed(user.verifySymbolUses(tables)) ? WalkResult::interrupt() : WalkResult::advance();
    });
    if (users.wasInterrupted())
      return false;
  }
  return true;
}
