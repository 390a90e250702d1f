// What blueprint-opt needs of mlir-opt's option handling that the C API
// does not offer: IR printing with mlir-opt's filters (before/after named
// passes, only on change or failure, without the driver's own verifier
// passes), the pass manager's textual dump, the registered passes (listed
// as `mlir-opt --list-passes` lists them, looked up and enumerated for
// did-you-mean suggestions) and the dialects a context can load.
#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"
#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Pass.h"
#include "mlir/CAPI/Support.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <string>
#include <vector>

using namespace mlir;

namespace {
std::vector<std::string> copyNames(const MlirStringRef *names, intptr_t count) {
  std::vector<std::string> out;
  for (intptr_t i = 0; i < count; ++i)
    out.emplace_back(names[i].data, names[i].length);
  return out;
}

bool named(Pass *pass, const std::vector<std::string> &names) {
  llvm::StringRef argument = pass->getArgument();
  for (const std::string &name : names)
    if (argument == name)
      return true;
  return false;
}
} // namespace

// IR printing as mlir-opt's --mlir-print-ir-{before,after}{,-all},
// -after-change and -after-failure set it up (PassManagerOptions.cpp):
// after-failure prints after every pass but only when it failed,
// after-change narrows the after-printing to passes that changed the IR.
// Passes whose description is `hidden` (the driver's verifiers, which
// mlir-opt runs implicitly) are never printed around.
extern "C" void blueprintPassManagerEnableIRPrinting(MlirPassManager passManager, bool beforeAll,
                                                     const MlirStringRef *before, intptr_t numBefore, bool afterAll,
                                                     const MlirStringRef *after, intptr_t numAfter, bool afterChange,
                                                     bool afterFailure, bool moduleScope, MlirOpPrintingFlags flags,
                                                     MlirStringRef hidden) {
  std::vector<std::string> beforeNames = copyNames(before, numBefore);
  std::vector<std::string> afterNames = copyNames(after, numAfter);
  std::string hiddenDescription(hidden.data, hidden.length);
  auto visible = [hiddenDescription](Pass *pass) {
    return hiddenDescription.empty() || pass->getDescription() != hiddenDescription;
  };
  std::function<bool(Pass *, Operation *)> shouldPrintBefore;
  if (beforeAll)
    shouldPrintBefore = [visible](Pass *pass, Operation *) { return visible(pass); };
  else if (!beforeNames.empty())
    shouldPrintBefore = [beforeNames](Pass *pass, Operation *) { return named(pass, beforeNames); };
  std::function<bool(Pass *, Operation *)> shouldPrintAfter;
  if (afterAll || afterFailure)
    shouldPrintAfter = [visible](Pass *pass, Operation *) { return visible(pass); };
  else if (!afterNames.empty())
    shouldPrintAfter = [afterNames](Pass *pass, Operation *) { return named(pass, afterNames); };
  if (!shouldPrintBefore && !shouldPrintAfter)
    return;
  if (!shouldPrintBefore)
    shouldPrintBefore = [](Pass *, Operation *) { return false; };
  if (!shouldPrintAfter)
    shouldPrintAfter = [](Pass *, Operation *) { return false; };
  unwrap(passManager)
      ->enableIRPrinting(shouldPrintBefore, shouldPrintAfter, moduleScope, afterChange, afterFailure, llvm::errs(),
                         *unwrap(flags));
}

// `mlir-opt --dump-pass-pipeline`: the pass manager's textual pipeline on
// stderr, pretty-printed.
extern "C" void blueprintPassManagerDump(MlirPassManager passManager) {
  unwrap(passManager)->dump();
  llvm::errs() << "\n";
  llvm::errs().flush();
}

// Whether `argument` names a registered pass or pass pipeline.
extern "C" bool blueprintIsRegisteredPass(MlirStringRef argument) {
  llvm::StringRef name = unwrap(argument);
  return PassInfo::lookup(name) != nullptr || PassPipelineInfo::lookup(name) != nullptr;
}

// `mlir-opt --list-passes` on stdout; false when stdout cannot be written.
extern "C" bool blueprintPrintRegisteredPasses(void) {
  printRegisteredPasses();
  llvm::outs().flush();
  if (llvm::outs().has_error()) {
    // Otherwise the stream's destructor aborts the process.
    llvm::outs().clear_error();
    return false;
  }
  return true;
}

// Every registered pass and pipeline argument, through `callback`. The
// registry itself is not public; mlir-opt's command-line parser lists
// every entry as one option each, so one such parser (made once, never
// used to parse) enumerates them. Call after every pass is registered. In
// a host that already has that parser (stock mlir-opt with the plugin),
// making a second one would register its options twice (a fatal error in
// LLVM's command line): the host's own lists the passes instead.
extern "C" void blueprintRegisteredPassNames(MlirStringCallback callback, void *userData) {
  static const char *kProbe = "blueprint: the registered passes, for suggestions";
  static const bool ours = [] {
    if (llvm::cl::getRegisteredOptions().count("pass-pipeline"))
      return false;
    new PassPipelineCLParser("", kProbe);
    return true;
  }();
  for (auto &entry : llvm::cl::getRegisteredOptions()) {
    llvm::cl::Option *option = entry.second;
    // A pass is a literal of an option without a name of its own.
    if (!option->ArgStr.empty() || (ours && option->HelpStr != kProbe))
      continue;
    callback(wrap(entry.first), userData);
  }
}

// The dialects `context` can load (registered, loaded or not), sorted.
extern "C" void blueprintAvailableDialects(MlirContext context, MlirStringCallback callback, void *userData) {
  for (llvm::StringRef name : unwrap(context)->getAvailableDialects())
    callback(wrap(name), userData);
}
