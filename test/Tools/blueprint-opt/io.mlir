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
// CHECK: plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
// CHECK: func.func @f() -> !plan.token
// CHECK-NEXT: %[[A:.*]] = plan.compute_task "t" matrix_multiply phase = forward ops = 1 read = 0 write = 0 demand(1, 0, 0) ranks = 1 group = compute {lineage = "t"}
// CHECK-NEXT: return %[[A]] : !plan.token
// GENERIC: "plan.header"() {schema_name = "blueprint.plan", schema_version = "1.0", source_digest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"} : () -> ()
// GENERIC: "func.func"()
// GENERIC: "plan.compute_task"() {capability = 0 : i32, {{.*}}group = 0 : i32, {{.*}}phase = 0 : i32, {{.*}}} : () -> !plan.token
// GENERIC: "func.return"
// LOC: loc("{{.*}}io.mlir":[[@LINE+1]]:1)
plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
func.func @f() -> !plan.token {
  %a = plan.compute_task "t" matrix_multiply phase = forward ops = 1 read = 0 write = 0 demand(1, 0, 0) ranks = 1 group = compute {lineage = "t"}
  return %a : !plan.token
}
