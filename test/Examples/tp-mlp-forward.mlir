// A tensor-parallel MLP forward over a 4-rank logical mesh, as a `dist`
// program: the input is replicated, the two matmuls run locally on each
// rank's weight shard, and one all-reduce rebuilds the output. Work and
// message bytes are exact for b=2, s=8, h=16, ffn=64, float16, TP=4.
// RUN: blueprint-opt %s --blueprint-verify | FileCheck %s
// RUN: blueprint-opt %s --pass-pipeline='builtin.module(blueprint-verify,canonicalize,cse)' | FileCheck %s

// CHECK: "dist.mesh"() {axes = ["tp"], shape = array<i64: 4>, sym_name = "tp"}
// CHECK: "dist.all_reduce"
// CHECK-SAME: message_bytes = 512 : i64
// CHECK-SAME: participants = array<i64: 0, 1, 2, 3>
"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:5e2b9f5c6a0d4e7f8a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a6b7"} : () -> ()
"dist.mesh"() {sym_name = "tp", axes = ["tp"], shape = array<i64: 4>} : () -> ()

func.func @mlp_forward() {
  // x[b*s, h] replicated; fc1 split by columns, fc2 by rows (Megatron).
  %x = "dist.value"() {id = "x", mesh = @tp, split_axes = [[], [], []], lineage = "block.in"} : () -> tensor<2x8x16xf16>
  %w1 = "dist.value"() {id = "w1", mesh = @tp, split_axes = [[], ["tp"]], lineage = "mlp.fc1"} : () -> tensor<16x64xf16>
  %w2 = "dist.value"() {id = "w2", mesh = @tp, split_axes = [["tp"], []], lineage = "mlp.fc2"} : () -> tensor<64x16xf16>
  // fc1: 2*M*N*K / TP = 2*16*16*64/4 ops; reads x (512 B) and the w1 shard (512 B), writes 16x16 (512 B).
  %t1 = "dist.compute"(%x) {id = "fw.fc1", mesh = @tp, phase = "forward", engine = "matrix", primitive = "matmul", ops = 8192 : i64, read_bytes = 1024 : i64, write_bytes = 512 : i64, lineage = "mlp.fc1"} : (tensor<2x8x16xf16>) -> !dist.token
  %t2 = "dist.compute"(%t1) {id = "fw.gelu", mesh = @tp, phase = "forward", engine = "vector", primitive = "gelu", ops = 256 : i64, read_bytes = 512 : i64, write_bytes = 512 : i64, lineage = "mlp.gelu"} : (!dist.token) -> !dist.token
  %t3 = "dist.compute"(%t2) {id = "fw.fc2", mesh = @tp, phase = "forward", engine = "matrix", primitive = "matmul", ops = 8192 : i64, read_bytes = 1024 : i64, write_bytes = 512 : i64, lineage = "mlp.fc2"} : (!dist.token) -> !dist.token
  %partial = "dist.value"() {id = "y.partial", mesh = @tp, split_axes = [[], [], []], lineage = "mlp.fc2"} : () -> tensor<2x8x16xf16>
  // The whole b*s*h tensor (2*8*16*2 bytes) is the logical message.
  %y = "dist.all_reduce"(%partial, %t3) {id = "fw.ar", mesh = @tp, phase = "forward", participants = array<i64: 0, 1, 2, 3>, reduction = "sum", message_bytes = 512 : i64, lineage = "mlp.fc2"} : (tensor<2x8x16xf16>, !dist.token) -> tensor<2x8x16xf16>
  "dist.output"(%y) {id = "y", mesh = @tp, split_axes = [[], [], []], lineage = "block.out"} : (tensor<2x8x16xf16>) -> ()
  return
}
