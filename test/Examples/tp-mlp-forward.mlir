// A tensor-parallel MLP forward over a 4-rank logical mesh, as a `dist`
// program: the input is replicated, the two matmuls run locally on each
// rank's weight shard, and one all-reduce rebuilds the output. Work and
// message bytes are exact for b=2, s=8, h=16, ffn=64, float16, TP=4.
// RUN: blueprint-opt %s --blueprint-verify | FileCheck %s
// RUN: blueprint-opt %s --pass-pipeline='builtin.module(blueprint-verify,canonicalize,cse)' | FileCheck %s

// CHECK: dist.mesh @tp(axes = ["tp"], shape = [4])
// CHECK: dist.compute "fw.fc1" on @tp phase = forward matrix matmul(%{{.*}} : tensor<2x8x16xf16>) ops = 8192 read = 1024 write = 512 {lineage = "mlp.fc1"} : !dist.token
// CHECK: %[[AR:.*]] = dist.all_reduce %{{.*}} after(%{{.*}}) on @tp over [0, 1, 2, 3] reduction = sum phase = forward bytes = 512 {id = "fw.ar", lineage = "mlp.fc2"} : tensor<2x8x16xf16>
// CHECK: dist.output %[[AR]] "y" on @tp split {{\[\[}}], [], []] {lineage = "block.out"} : tensor<2x8x16xf16>
dist.header schema "blueprint.dist" version "1.0" model "sha256:5e2b9f5c6a0d4e7f8a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a6b7"
dist.mesh @tp(axes = ["tp"], shape = [4])

func.func @mlp_forward() {
  // x[b*s, h] replicated; fc1 split by columns, fc2 by rows (Megatron).
  %x = dist.value "x" on @tp split [[], [], []] {lineage = "block.in"} : tensor<2x8x16xf16>
  %w1 = dist.value "w1" on @tp split [[], ["tp"]] {lineage = "mlp.fc1"} : tensor<16x64xf16>
  %w2 = dist.value "w2" on @tp split [["tp"], []] {lineage = "mlp.fc2"} : tensor<64x16xf16>
  // fc1: 2*M*N*K / TP = 2*16*16*64/4 ops; reads x (512 B) and the w1 shard (512 B), writes 16x16 (512 B).
  %t1 = dist.compute "fw.fc1" on @tp phase = forward matrix matmul(%x : tensor<2x8x16xf16>) ops = 8192 read = 1024 write = 512 {lineage = "mlp.fc1"} : !dist.token
  %t2 = dist.compute "fw.gelu" on @tp phase = forward vector gelu(%t1 : !dist.token) ops = 256 read = 512 write = 512 {lineage = "mlp.gelu"} : !dist.token
  %t3 = dist.compute "fw.fc2" on @tp phase = forward matrix matmul(%t2 : !dist.token) ops = 8192 read = 1024 write = 512 {lineage = "mlp.fc2"} : !dist.token
  %partial = dist.value "y.partial" on @tp split [[], [], []] {lineage = "mlp.fc2"} : tensor<2x8x16xf16>
  // The whole b*s*h tensor (2*8*16*2 bytes) is the logical message.
  %y = dist.all_reduce %partial after(%t3) on @tp over [0, 1, 2, 3] reduction = sum phase = forward bytes = 512 {id = "fw.ar", lineage = "mlp.fc2"} : tensor<2x8x16xf16>
  dist.output %y "y" on @tp split [[], [], []] {lineage = "block.out"} : tensor<2x8x16xf16>
  return
}
