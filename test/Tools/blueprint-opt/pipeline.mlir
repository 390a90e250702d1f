// Blueprint passes and upstream passes mix in one pipeline, by
// --pass-pipeline or by one flag per pass; the verifiers run after each.
// RUN: blueprint-opt %s --pass-pipeline='builtin.module(blueprint-verify, canonicalize, func.func(cse))' | FileCheck %s
// RUN: blueprint-opt %s --blueprint-verify --canonicalize --cse | FileCheck %s
// RUN: blueprint-opt %s --pass-pipeline='builtin.module(canonicalize{max-iterations=2})' | FileCheck %s
// RUN: blueprint-opt %s --canonicalize=max-iterations=2 | FileCheck %s
// RUN: blueprint-opt %s --canonicalize --mlir-timing 2>&1 >/dev/null | FileCheck %s --check-prefix=TIMING
// RUN: blueprint-opt %s --canonicalize --mlir-print-ir-after-all 2>&1 >/dev/null | FileCheck %s --check-prefix=AFTER
// RUN: not blueprint-opt %s --pass-pipeline='builtin.module(no-such-pass)' 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not blueprint-opt %s --pass-pipeline='builtin.module(cse' 2>&1 | FileCheck %s --check-prefix=UNBALANCED
// RUN: not blueprint-opt %s --pass-pipeline='builtin.module(blueprint-verify{x=1})' 2>&1 | FileCheck %s --check-prefix=OPTIONS

// CHECK-LABEL: func.func @fold
// CHECK-NEXT: %[[C:.*]] = arith.constant 3 : index
// CHECK-NEXT: dist.compute "c" on @m phase = forward vector gelu(%arg0 : !dist.token) ops = 1 read = 2 write = 2 {lineage = "l"} : !dist.token
// CHECK-NEXT: return %[[C]]
// TIMING: Execution time report
// TIMING: Canonicalizer
// TIMING: BlueprintVerify
// AFTER: IR Dump After Canonicalizer
// The driver's verifiers between passes are implicit, as in mlir-opt.
// AFTER-NOT: IR Dump After BlueprintVerify
// UNKNOWN: invalid pass pipeline 'no-such-pass'
// RUN: not blueprint-opt %s --pass-pipeline='builtin.module(canonicalise)' 2>&1 | FileCheck %s --check-prefix=NEAR
// NEAR: 'canonicalise' does not refer to a registered pass
// NEAR: did you mean 'canonicalize'?
// UNBALANCED: invalid pass pipeline 'builtin.module(cse': expected 'builtin.module(...)'
// OPTIONS: Blueprint pass 'blueprint-verify' takes no options

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @m(axes = ["x"], shape = [2])
func.func @fold(%t: !dist.token) -> index {
  %a = arith.constant 1 : index
  %b = arith.constant 2 : index
  %c = arith.addi %a, %b : index
  %t1 = dist.compute "c" on @m phase = forward vector gelu(%t : !dist.token) ops = 1 read = 2 write = 2 {lineage = "l"} : !dist.token
  return %c : index
}
