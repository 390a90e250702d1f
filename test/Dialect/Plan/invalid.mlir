// RUN: blueprint-opt %s --split-input-file --verify-diagnostics
// One case per PortablePlanIR verifier rule, in the custom form (the
// generic form where only it can state the case).

// expected-error @+1 {{'plan.objective' op is in a module without a 'plan.header' (schema name and version)}}
plan.objective latency

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
// expected-error @+1 {{'plan.header' op is a second header; the first is at}}
plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"

// -----

// expected-error @+1 {{'plan.header' op attribute 'source_digest' must be 'sha256:' followed by 64 lowercase hex digits, but got 'sha256:XYZ'}}
plan.header schema "blueprint.plan" version "1.0" source "sha256:XYZ"

// -----

// expected-error @+1 {{'plan.header' op expected schema_name 'blueprint.plan', but got 'plan'}}
plan.header schema "plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"

// -----

// expected-error @+1 {{'plan.header' op unsupported schema_version '0.9' (this build reads 1.x)}}
plan.header schema "blueprint.plan" version "0.9" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
func.func @duplicate_task_id() {
  %a = plan.compute_task "t" matrix_multiply phase = forward ops = 100 read = 40 write = 20 demand(100, 60, 0) ranks = 8 group = compute {lineage = "fw.qkv"}
  // expected-error @+1 {{'plan.compute_task' op redefines id 't' (first defined at}}
  %b = plan.compute_task "t" after(%a) matrix_multiply phase = forward ops = 100 read = 40 write = 20 demand(100, 60, 0) ranks = 8 group = compute {lineage = "fw.qkv"}
  return
}

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
func.func @empty_id() {
  // expected-error @+1 {{'plan.collective_task' op id must not be empty}}
  %a = plan.collective_task "" all_reduce bytes = 64 phase = forward ops = 100 read = 40 write = 20 demand(100, 60, 0) ranks = 8 group = network {lineage = "fw.ar"}
  return
}

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
// expected-error @+1 {{'plan.buffer' op symbol must not be empty}}
plan.buffer @"" weight size = 16 align = 16 in local {lineage = "x"}

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
plan.buffer @b weight size = 16 align = 16 in local {lineage = "x"}
// expected-error @+1 {{redefinition of symbol named 'b'}}
plan.buffer @b weight size = 16 align = 16 in local {lineage = "x"}

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
func.func @kernel_in_plan() {
  // expected-error @+1 {{'plan.compute_task' op attribute 'kernel_id' is a placement or target field, illegal in the 'plan' layer}}
  %a = plan.compute_task "t" matrix_multiply phase = forward ops = 100 read = 40 write = 20 demand(100, 60, 0) ranks = 8 group = compute {kernel_id = "sm90_gemm", lineage = "fw.qkv"}
  return
}

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
func.func @duration_in_plan() {
  // expected-error @+1 {{'plan.compute_task' op attribute 'est.duration' is a placement or target field, illegal in the 'plan' layer}}
  %a = plan.compute_task "t" matrix_multiply phase = forward ops = 100 read = 40 write = 20 demand(100, 60, 0) ranks = 8 group = compute {est.duration = 1.5 : f64, lineage = "fw.qkv"}
  return
}

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
// expected-error @+1 {{'plan.buffer' op attribute 'user.placement' nests field 'memory_bank', a placement or target field illegal in the 'plan' layer}}
plan.buffer @b weight size = 16 align = 16 in local {lineage = "x", user.placement = {memory_bank = 0 : i64}}

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
func.func @target_name() {
  // expected-error @+1 {{'plan.collective_task' op attribute 'lineage' names target 'rccl' in "rccl.allreduce"; the 'plan' layer is target-neutral}}
  %a = plan.collective_task "t" all_reduce bytes = 64 phase = forward ops = 100 read = 40 write = 20 demand(100, 60, 0) ranks = 8 group = network {lineage = "rccl.allreduce"}
  return
}

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
func.func @unknown_attribute() {
  // expected-error @+1 {{'plan.compute_task' op has unknown attribute 'priority' (not declared by 'plan.compute_task')}}
  %a = plan.compute_task "t" matrix_multiply phase = forward ops = 100 read = 40 write = 20 demand(100, 60, 0) ranks = 8 group = compute {lineage = "fw.qkv", priority = 2 : i64}
  return
}

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
func.func @target_dialect() {
  %a = plan.compute_task "t" matrix_multiply phase = forward ops = 100 read = 40 write = 20 demand(100, 60, 0) ranks = 8 group = compute {lineage = "fw.qkv"}
  // expected-error @+1 {{'nvvm.barrier0' op belongs to target dialect 'nvvm', which is not allowed beside target-neutral Blueprint IR}}
  nvvm.barrier0
  return
}

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
func.func @collective_in_compute_group() {
  // expected-error @+1 {{'plan.collective_task' op must be in concurrency group 'network', but is in 'compute'}}
  %a = plan.collective_task "t" all_reduce bytes = 64 phase = forward ops = 100 read = 40 write = 20 demand(100, 60, 0) ranks = 8 group = compute {lineage = "fw.ar"}
  return
}

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
func.func @compute_in_network_group() {
  // expected-error @+1 {{'plan.compute_task' op must be in concurrency group 'compute', but is in 'network'}}
  %a = plan.compute_task "t" matrix_multiply phase = forward ops = 100 read = 40 write = 20 demand(100, 60, 0) ranks = 8 group = network {lineage = "fw.qkv"}
  return
}

// -----

// Rules ODS states are checked by the generated C++ verifiers and parsers.
plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
func.func @negative_ops() {
  // expected-error @+1 {{'plan.compute_task' op attribute 'ops' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %a = plan.compute_task "t" matrix_multiply phase = forward ops = -1 read = 0 write = 0 demand(0, 0, 0) ranks = 8 group = compute {lineage = "t"}
  return
}

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
func.func @negative_demand() {
  // expected-error @+1 {{'plan.compute_task' op attribute 'memory_demand' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %a = plan.compute_task "t" matrix_multiply phase = forward ops = 1 read = 0 write = 0 demand(0, -5, 0) ranks = 8 group = compute {lineage = "t"}
  return
}

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
func.func @negative_message() {
  // expected-error @+1 {{'plan.collective_task' op attribute 'message_bytes' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %a = plan.collective_task "t" all_reduce bytes = -64 phase = forward ops = 0 read = 0 write = 0 demand(0, 0, 64) ranks = 8 group = network {lineage = "fw.ar"}
  return
}

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
func.func @zero_ranks() {
  // expected-error @+1 {{'plan.compute_task' op attribute 'ranks' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %a = plan.compute_task "t" matrix_multiply phase = forward ops = 1 read = 0 write = 0 demand(0, 0, 0) ranks = 0 group = compute {lineage = "t"}
  return
}

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
func.func @zero_shared_by() {
  // expected-error @+1 {{'plan.compute_task' op attribute 'shared_by' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %a = plan.compute_task "t" vector_elementwise phase = forward ops = 100 read = 40 write = 20 demand(100, 60, 0) ranks = 8 group = compute shared_by = 0 {lineage = "t"}
  return
}

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
func.func @collective_capability_on_compute() {
  // expected-error @+1 {{custom op 'plan.compute_task' expected string or keyword containing one of the following enum values for attribute 'capability' [matrix_multiply, vector_elementwise]}}
  %a = plan.compute_task "t" all_reduce phase = forward ops = 100 read = 40 write = 20 demand(100, 60, 0) ranks = 8 group = compute {lineage = "fw.qkv"}
  return
}

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
func.func @compute_capability_on_collective() {
  // expected-error @+1 {{'plan.collective_task' op attribute 'capability' failed to satisfy constraint: communication capability}}
  %a = "plan.collective_task"() {id = "t", capability = 6 : i32, group = 1 : i32, lineage = "fw.ar", phase = 0 : i32, ops = 0 : i64, read_bytes = 0 : i64, write_bytes = 0 : i64, compute_demand = 0 : i64, memory_demand = 0 : i64, network_demand = 64 : i64, ranks = 8 : i64, message_bytes = 64 : i64} : () -> !plan.token
  return
}

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
func.func @bad_group() {
  // expected-error @+1 {{custom op 'plan.compute_task' expected string or keyword containing one of the following enum values for attribute 'group' [compute, network]}}
  %a = plan.compute_task "t" matrix_multiply phase = forward ops = 100 read = 40 write = 20 demand(100, 60, 0) ranks = 8 group = dma {lineage = "fw.qkv"}
  return
}

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
func.func @missing_attribute() {
  // expected-error @+1 {{'plan.compute_task' op requires attribute 'network_demand'}}
  %a = "plan.compute_task"() {id = "t", capability = 0 : i32, group = 0 : i32, lineage = "fw.qkv", phase = 0 : i32, ops = 100 : i64, read_bytes = 40 : i64, write_bytes = 20 : i64, compute_demand = 100 : i64, memory_demand = 60 : i64, ranks = 8 : i64} : () -> !plan.token
  return
}

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
// expected-error @+1 {{'plan.buffer' op attribute 'alignment' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive and whose value is a power of two > 0}}
plan.buffer @b kv_cache size = 16 align = 48 in local {lineage = "x"}

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
// expected-error @+1 {{'plan.buffer' op attribute 'size' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
plan.buffer @b kv_cache size = -16 align = 64 in local {lineage = "x"}

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
// expected-error @+1 {{custom op 'plan.buffer' expected string or keyword containing one of the following enum values for attribute 'memory_space' [local, host, shared]}}
plan.buffer @b weight size = 16 align = 64 in hbm_bank0 {lineage = "x"}

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
// expected-error @+1 {{custom op 'plan.buffer' expected string or keyword containing one of the following enum values for attribute 'contents'}}
plan.buffer @b registers size = 16 align = 64 in local {lineage = "x"}

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
func.func @deps_are_tokens(%x: tensor<4xf16>) {
  // expected-error @+1 {{'plan.compute_task' op operand #0 must be variadic of Completion of a plan task, but got 'tensor<4xf16>'}}
  %a = "plan.compute_task"(%x) {id = "t", capability = 0 : i32, group = 0 : i32, lineage = "fw.qkv", phase = 0 : i32, ops = 100 : i64, read_bytes = 40 : i64, write_bytes = 20 : i64, compute_demand = 100 : i64, memory_demand = 60 : i64, network_demand = 0 : i64, ranks = 8 : i64} : (tensor<4xf16>) -> !plan.token
  return
}

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
// expected-error @+1 {{custom op 'plan.objective' expected string or keyword containing one of the following enum values for attribute 'kind' [latency, peak_memory]}}
plan.objective throughput

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
// The old string spelling of a case is not an enum attribute.
// expected-error @+1 {{'plan.objective' op attribute 'kind' failed to satisfy constraint: objective}}
"plan.objective"() {kind = "latency"} : () -> ()

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
func.func @yield_outside_chunk(%t: !plan.token) {
  // expected-error @+1 {{'plan.yield' op expects parent op 'plan.chunk'}}
  plan.yield %t : !plan.token
}

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
// expected-error @+1 {{'plan.pipeline' op attribute 'microbatches' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
plan.pipeline @step schedule = gpipe stages = 2 chunks = 1 microbatches = 0 blocks = 8

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
plan.pipeline @step schedule = gpipe stages = 2 chunks = 1 microbatches = 4 blocks = 8
plan.chunk @c of @step stage = 0 chunk = 0 first_block = 0 blocks = 2 {
  // expected-error @+1 {{'plan.buffer' op symbol's parent must have the SymbolTable trait}}
  plan.buffer @b weight size = 16 align = 16 in local {lineage = "x"}
  plan.yield
} boundary {
  plan.yield
}

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
func.func @tiling0() {
  %a = plan.compute_task "fw.mm" matrix_multiply phase = forward ops = 100 read = 40 write = 20 demand(100, 60, 0) ranks = 8 group = compute {lineage = "fw.mm"}
  %l = plan.compute_task "fw.ln" vector_elementwise phase = forward ops = 100 read = 40 write = 20 demand(100, 60, 0) ranks = 8 group = compute {lineage = "fw.ln"}
  // expected-error @+1 {{'plan.collective_task' op a tiled collective states 'tiled_with', 'tiles' and 'overlap' together, but 'tiled_with' is missing}}
  %b = plan.collective_task "fw.ar" after(%a) all_reduce bytes = 64 phase = forward ops = 0 read = 0 write = 0 demand(0, 0, 64) ranks = 8 group = network tiles = 8 overlap = ring {lineage = "fw.mm"}
  return
}

// -----

plan.header schema "blueprint.plan" version "1.0" source "sha256:2222222222222222222222222222222222222222222222222222222222222222"
func.func @tiling1() {
  %a = plan.compute_task "fw.mm" matrix_multiply phase = forward ops = 100 read = 40 write = 20 demand(100, 60, 0) ranks = 8 group = compute {lineage = "fw.mm"}
  %l = plan.compute_task "fw.ln" vector_elementwise phase = forward ops = 100 read = 40 write = 20 demand(100, 60, 0) ranks = 8 group = compute {lineage = "fw.ln"}
  // expected-error @+1 {{'plan.collective_task' op 'tiled_with' must name a matmul task, but 'fw.ln' is not one}}
  %b = plan.collective_task "fw.ar" after(%a) all_reduce bytes = 64 phase = forward ops = 0 read = 0 write = 0 demand(0, 0, 64) ranks = 8 group = network tiled_with "fw.ln" tiles = 8 overlap = ring {lineage = "fw.mm"}
  return
}
