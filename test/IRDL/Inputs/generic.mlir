// Blueprint IR in the generic form, as a tool that knows only the IRDL
// would write it: closed choices are their `i32` cases, effects a bit set.
"model.header"() {schema_name = "blueprint.model", schema_version = "1.0"} : () -> ()
"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 2>} : () -> ()
"plan.header"() {schema_name = "blueprint.plan", schema_version = "1.0", source_digest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"} : () -> ()
"plan.buffer"() {sym_name = "w", size = 64 : i64, alignment = 64 : i64, memory_space = 0 : i32, contents = 0 : i32, lineage = "w"} : () -> ()
func.func @model() {
  %x = "model.value"() {id = "x", role = 6 : i32} : () -> tensor<4xf16>
  %d = "model.dropout"(%x) {id = "drop", effects = 2 : i32, p = 0.000000e+00 : f64} : (tensor<4xf16>) -> tensor<4xf16>
  "model.output"(%d) {id = "out", role = 1 : i32} : (tensor<4xf16>) -> ()
  return
}
func.func @dist(%t: !dist.token, %x: tensor<4xf16>) -> tensor<4xf16> {
  %c = "dist.compute"(%t) {id = "c", mesh = @tp, phase = 0 : i32, lineage = "l", engine = 1 : i32, primitive = 4 : i32, ops = 1 : i64, read_bytes = 2 : i64, write_bytes = 2 : i64} : (!dist.token) -> !dist.token
  %h, %y = "dist.all_reduce_start"(%x, %c) {id = "ar", mesh = @tp, phase = 0 : i32, lineage = "l", participants = array<i64: 0, 1>, reduction = 0 : i32, message_bytes = 8 : i64} : (tensor<4xf16>, !dist.token) -> (!dist.async_handle, tensor<4xf16>)
  "dist.wait"(%h) : (!dist.async_handle) -> ()
  %r = "dist.rank"() {mesh = @tp} : () -> index
  return %y : tensor<4xf16>
}
func.func @plan() {
  %a = "plan.compute_task"() {id = "t", capability = 1 : i32, group = 0 : i32, lineage = "c", phase = 0 : i32, ops = 1 : i64, read_bytes = 2 : i64, write_bytes = 2 : i64, compute_demand = 1 : i64, memory_demand = 4 : i64, network_demand = 0 : i64, ranks = 2 : i64} : () -> !plan.token
  %b = "plan.collective_task"(%a) {id = "ar", capability = 0 : i32, group = 1 : i32, lineage = "ar", phase = 0 : i32, ops = 0 : i64, read_bytes = 0 : i64, write_bytes = 0 : i64, compute_demand = 0 : i64, memory_demand = 0 : i64, network_demand = 8 : i64, ranks = 2 : i64, message_bytes = 8 : i64} : (!plan.token) -> !plan.token
  return
}
