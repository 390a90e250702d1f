// --verify-diagnostics fails when an expected diagnostic is missing or an
// unexpected one appears, and names both.
// RUN: not blueprint-opt %s --verify-diagnostics 2>&1 | FileCheck %s

// CHECK-DAG: verify-diagnostics.mlir:[[@LINE+2]]: error: expected error "this is never reported" was not produced
"plan.header"() {schema_name = "blueprint.plan", schema_version = "1.0", source_digest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"} : () -> ()
// expected-error @+1 {{this is never reported}}
"plan.objective"() {kind = "latency"} : () -> ()
// CHECK-DAG: verify-diagnostics.mlir:[[@LINE+1]]:1: error: 'plan.buffer' op attribute 'alignment' must be a positive power of two, but got 3
"plan.buffer"() {sym_name = "b", size = 16 : i64, alignment = 3 : i64, memory_space = "local", contents = "kv_cache", lineage = "x"} : () -> ()
// CHECK-DAG: (unexpected error)
