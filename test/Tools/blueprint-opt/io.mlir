// Input from a file, from stdin (implicit and '-'), output to -o.
// RUN: blueprint-opt %s | FileCheck %s
// RUN: blueprint-opt < %s | FileCheck %s
// RUN: cat %s | blueprint-opt - | FileCheck %s
// RUN: blueprint-opt %s -o %t.out && FileCheck %s < %t.out
// Generic form applies to upstream ops too.
// RUN: blueprint-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC
// Locations of the input survive with --mlir-print-debuginfo.
// RUN: blueprint-opt %s --mlir-print-debuginfo | FileCheck %s --check-prefix=LOC
// Output is deterministic: same input, same bytes.
// RUN: blueprint-opt %s > %t.a && blueprint-opt %s > %t.b && cmp %t.a %t.b

// CHECK: module {
// CHECK: "plan.header"()
// CHECK: func.func @f() -> !plan.token
// GENERIC: "func.func"()
// LOC: loc("{{.*}}io.mlir":[[@LINE+1]]:1)
"plan.header"() {schema_name = "blueprint.plan", schema_version = "1.0", source_digest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"} : () -> ()
func.func @f() -> !plan.token {
  %a = "plan.compute_task"() {id = "t", capability = "matrix_multiply", group = "compute", lineage = "t", phase = "forward", ops = 1 : i64, read_bytes = 0 : i64, write_bytes = 0 : i64, compute_demand = 1 : i64, memory_demand = 0 : i64, network_demand = 0 : i64, ranks = 1 : i64} : () -> !plan.token
  return %a : !plan.token
}
