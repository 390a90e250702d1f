// RUN: blueprint-opt %s --split-input-file --verify-diagnostics
// One case per PortablePlanIR verifier rule.

// expected-error @+1 {{'plan.objective' op is in a module without a 'plan.header'}}
"plan.objective"() {kind = "latency"} : () -> ()

// -----

// expected-error @+1 {{attribute 'source_digest' must be 'sha256:' followed by 64 lowercase hex digits, but got 'sha256:XYZ'}}
"plan.header"() {schema_name = "blueprint.plan", schema_version = "1.0", source_digest = "sha256:XYZ"} : () -> ()

// -----

"plan.header"() {schema_name = "blueprint.plan", schema_version = "1.0", source_digest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"} : () -> ()
func.func @negative_ops() {
  // expected-error @+1 {{'plan.compute_task' op attribute 'ops' must be non-negative, but got -1}}
  %a = "plan.compute_task"() {id = "t", capability = "matrix_multiply", group = "compute", lineage = "t", phase = "forward", ops = -1 : i64, read_bytes = 0 : i64, write_bytes = 0 : i64, compute_demand = 0 : i64, memory_demand = 0 : i64, network_demand = 0 : i64, ranks = 8 : i64} : () -> !plan.token
  return
}

// -----

"plan.header"() {schema_name = "blueprint.plan", schema_version = "1.0", source_digest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"} : () -> ()
func.func @negative_message() {
  // expected-error @+1 {{'plan.collective_task' op attribute 'message_bytes' must be non-negative, but got -64}}
  %a = "plan.collective_task"() {id = "t", capability = "all_reduce", group = "network", lineage = "fw.ar", phase = "forward", ops = 0 : i64, read_bytes = 0 : i64, write_bytes = 0 : i64, compute_demand = 0 : i64, memory_demand = 0 : i64, network_demand = 64 : i64, ranks = 8 : i64, message_bytes = -64 : i64} : () -> !plan.token
  return
}

// -----

"plan.header"() {schema_name = "blueprint.plan", schema_version = "1.0", source_digest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"} : () -> ()
func.func @zero_ranks() {
  // expected-error @+1 {{'plan.compute_task' op attribute 'ranks' must be positive, but got 0}}
  %a = "plan.compute_task"() {id = "t", capability = "matrix_multiply", group = "compute", lineage = "t", phase = "forward", ops = 1 : i64, read_bytes = 0 : i64, write_bytes = 0 : i64, compute_demand = 0 : i64, memory_demand = 0 : i64, network_demand = 0 : i64, ranks = 0 : i64} : () -> !plan.token
  return
}

// -----

"plan.header"() {schema_name = "blueprint.plan", schema_version = "1.0", source_digest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"} : () -> ()
func.func @wrong_group() {
  // expected-error @+1 {{'plan.collective_task' op must be in concurrency group 'network', but is in 'compute'}}
  %a = "plan.collective_task"() {id = "t", capability = "all_reduce", group = "compute", lineage = "fw.ar", phase = "forward", ops = 0 : i64, read_bytes = 0 : i64, write_bytes = 0 : i64, compute_demand = 0 : i64, memory_demand = 0 : i64, network_demand = 64 : i64, ranks = 8 : i64, message_bytes = 64 : i64} : () -> !plan.token
  return
}

// -----

"plan.header"() {schema_name = "blueprint.plan", schema_version = "1.0", source_digest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"} : () -> ()
func.func @collective_capability_on_compute() {
  // expected-error @+1 {{'"all_reduce"' does not satisfy the constraint}}
  %a = "plan.compute_task"() {id = "t", capability = "all_reduce", group = "compute", lineage = "fw.qkv", phase = "forward", ops = 100 : i64, read_bytes = 40 : i64, write_bytes = 20 : i64, compute_demand = 100 : i64, memory_demand = 60 : i64, network_demand = 0 : i64, ranks = 8 : i64} : () -> !plan.token
  return
}

// -----

"plan.header"() {schema_name = "blueprint.plan", schema_version = "1.0", source_digest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"} : () -> ()
func.func @kernel_in_plan() {
  // expected-error @+1 {{attribute 'kernel_id' is a placement or target field, illegal in the 'plan' layer}}
  %a = "plan.compute_task"() {id = "t", capability = "matrix_multiply", group = "compute", kernel_id = "sm90_gemm", lineage = "fw.qkv", phase = "forward", ops = 100 : i64, read_bytes = 40 : i64, write_bytes = 20 : i64, compute_demand = 100 : i64, memory_demand = 60 : i64, network_demand = 0 : i64, ranks = 8 : i64} : () -> !plan.token
  return
}

// -----

"plan.header"() {schema_name = "blueprint.plan", schema_version = "1.0", source_digest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"} : () -> ()
func.func @duration_in_plan() {
  // expected-error @+1 {{attribute 'est.duration' is a placement or target field, illegal in the 'plan' layer}}
  %a = "plan.compute_task"() {id = "t", capability = "matrix_multiply", group = "compute", est.duration = 1.5 : f64, lineage = "fw.qkv", phase = "forward", ops = 100 : i64, read_bytes = 40 : i64, write_bytes = 20 : i64, compute_demand = 100 : i64, memory_demand = 60 : i64, network_demand = 0 : i64, ranks = 8 : i64} : () -> !plan.token
  return
}

// -----

"plan.header"() {schema_name = "blueprint.plan", schema_version = "1.0", source_digest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"} : () -> ()
// expected-error @+1 {{'plan.buffer' op attribute 'alignment' must be a positive power of two, but got 48}}
"plan.buffer"() {sym_name = "b", size = 16 : i64, alignment = 48 : i64, memory_space = "local", contents = "kv_cache", lineage = "x"} : () -> ()

// -----

"plan.header"() {schema_name = "blueprint.plan", schema_version = "1.0", source_digest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"} : () -> ()
// expected-error @+1 {{'"hbm_bank0"' does not satisfy the constraint}}
"plan.buffer"() {sym_name = "b", size = 16 : i64, alignment = 64 : i64, memory_space = "hbm_bank0", contents = "weight", lineage = "x"} : () -> ()

// -----

"plan.header"() {schema_name = "blueprint.plan", schema_version = "1.0", source_digest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"} : () -> ()
// expected-error @+1 {{'plan.buffer' op attribute 'size' must be non-negative, but got -16}}
"plan.buffer"() {sym_name = "b", size = -16 : i64, alignment = 64 : i64, memory_space = "local", contents = "kv_cache", lineage = "x"} : () -> ()

// -----

"plan.header"() {schema_name = "blueprint.plan", schema_version = "1.0", source_digest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"} : () -> ()
func.func @duplicate_task_id() {
  %a = "plan.compute_task"() {id = "t", capability = "matrix_multiply", group = "compute", lineage = "fw.qkv", phase = "forward", ops = 100 : i64, read_bytes = 40 : i64, write_bytes = 20 : i64, compute_demand = 100 : i64, memory_demand = 60 : i64, network_demand = 0 : i64, ranks = 8 : i64} : () -> !plan.token
  // expected-error @+1 {{'plan.compute_task' op redefines id 't' (first defined at}}
  %b = "plan.compute_task"(%a) {id = "t", capability = "matrix_multiply", group = "compute", lineage = "fw.qkv", phase = "forward", ops = 100 : i64, read_bytes = 40 : i64, write_bytes = 20 : i64, compute_demand = 100 : i64, memory_demand = 60 : i64, network_demand = 0 : i64, ranks = 8 : i64} : (!plan.token) -> !plan.token
  return
}

// -----

"plan.header"() {schema_name = "blueprint.plan", schema_version = "1.0", source_digest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"} : () -> ()
func.func @deps_are_tokens(%x: tensor<4xf16>) {
  // expected-error @+1 {{expected base type 'plan.token' but got 'builtin.tensor'}}
  %a = "plan.compute_task"(%x) {id = "t", capability = "matrix_multiply", group = "compute", lineage = "fw.qkv", phase = "forward", ops = 100 : i64, read_bytes = 40 : i64, write_bytes = 20 : i64, compute_demand = 100 : i64, memory_demand = 60 : i64, network_demand = 0 : i64, ranks = 8 : i64} : (tensor<4xf16>) -> !plan.token
  return
}

// -----

"plan.header"() {schema_name = "blueprint.plan", schema_version = "1.0", source_digest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"} : () -> ()
// expected-error @+1 {{'"throughput"' does not satisfy the constraint}}
"plan.objective"() {kind = "throughput"} : () -> ()
