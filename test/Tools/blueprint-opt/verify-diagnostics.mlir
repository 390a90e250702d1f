// --verify-diagnostics fails when an expected diagnostic is missing or an
// unexpected one appears, and names both.
// RUN: not blueprint-opt %s --verify-diagnostics 2>&1 | FileCheck %s

// CHECK-DAG: verify-diagnostics.mlir:[[@LINE+2]]: error: expected error "this is never reported" was not produced
plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
// expected-error @+1 {{this is never reported}}
plan.objective latency
// CHECK-DAG: verify-diagnostics.mlir:[[@LINE+1]]:1: error: 'plan.buffer' op attribute 'alignment' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive and whose value is a power of two > 0
plan.buffer @b kv_cache size = 16 align = 3 in local {lineage = "x"}
// CHECK-DAG: (unexpected error)
