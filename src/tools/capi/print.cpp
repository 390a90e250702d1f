// Printing an op through a buffered stream. The C API's
// mlirOperationPrintWithFlags streams through an unbuffered
// CallbackOstream: the callback runs for every token the printer emits
// (millions for a large module). This one hands the callback 64 KiB at a
// time.
#include "mlir-c/IR.h"
#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Utils.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/OperationSupport.h"

extern "C" void blueprintOperationPrintBuffered(MlirOperation op, MlirOpPrintingFlags flags,
                                                MlirStringCallback callback, void *userData) {
  mlir::detail::CallbackOstream stream(callback, userData);
  stream.SetBufferSize(1 << 16);
  unwrap(op)->print(stream, *unwrap(flags));
  stream.flush();
}
