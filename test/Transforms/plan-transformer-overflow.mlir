// Plan facts are i64 attributes copied or derived exactly from the dist
// program. A derived fact that does not fit (a compute task's memory demand,
// read_bytes + write_bytes; a boundary value's shard size) is a located error
// at the dist op, never a panic, a wrapped negative value, a saturated value
// or a verifier complaint about the plan the pass built.
// RUN: blueprint-opt %s --split-input-file --verify-diagnostics --plan-transformer-inference
// RUN: blueprint-opt %s --split-input-file --verify-diagnostics --plan-transformer-training
// The largest demand that fits is planned exactly.
// RUN: blueprint-opt %S/Inputs/plan-memory-demand-max.mlir --plan-transformer-inference | FileCheck %s
// CHECK: plan.compute_task "mlp.up.decode" matrix_multiply phase = decode ops = 1 read = 1 write = 9223372036854775806 demand(1, 9223372036854775807, 0)

// The fuzz reproducer (target/fuzz-crashes/minimal/plan-memory-demand-overflow.mlir):
// 1 + (2^63 - 1) overflowed i64 (a panic in debug builds; in release a
// negative demand the plan verifier then rejected).
module {
  dist.header schema "blueprint.dist" version "1.0" model "sha256:7e7554f439ba870dd69196bb81d71cf67502c954c3d3de251479e2fc9f8ee5ab"
  dist.mesh @block_mesh(axes = ["pp", "tp_kv", "tp_rep"], shape = [1, 4, 1])
  func.func @decoder_block_inference_dist() {
    %0 = dist.value "prompt.in" on @block_mesh split [[], [], []] {lineage = "prompt.in"} : tensor<8x512x4096xf16>
    // expected-error @+1 {{memory demand of task 'mlp.up.decode' (read_bytes + write_bytes) exceeds 2^63 - 1 bytes}}
    %1 = dist.compute "mlp.up.decode" on @block_mesh phase = decode matrix matmul(%0 : tensor<8x512x4096xf16>) ops = 1 read = 1 write = 9223372036854775807 {lineage = "decode"} : !dist.token
    return
  }
}

// -----

// The sum fits in u64 but not in i64 (a u64 saturating sum converted to i64
// by the builders would have become 2^63 - 1, silently).
module {
  dist.header schema "blueprint.dist" version "1.0" model "sha256:7e7554f439ba870dd69196bb81d71cf67502c954c3d3de251479e2fc9f8ee5ab"
  dist.mesh @block_mesh(axes = ["tp"], shape = [2])
  func.func @decoder_block_dist() {
    %0 = dist.value "block.in" on @block_mesh split [[], [], []] {lineage = "block.in"} : tensor<2x16x64xf16>
    // expected-error @+1 {{memory demand of task 'mlp.fc1.fwd' (read_bytes + write_bytes) exceeds 2^63 - 1 bytes}}
    %1 = dist.compute "mlp.fc1.fwd" on @block_mesh phase = forward matrix matmul(%0 : tensor<2x16x64xf16>) ops = 1 read = 9223372036854775807 write = 9223372036854775807 {lineage = "mlp.fc1"} : !dist.token
    return
  }
}

// -----

// A boundary value whose shard is 2^62 x 4 = 2^64 bytes (the product
// overflowed u64: a panic in debug builds).
module {
  dist.header schema "blueprint.dist" version "1.0" model "sha256:7e7554f439ba870dd69196bb81d71cf67502c954c3d3de251479e2fc9f8ee5ab"
  dist.mesh @block_mesh(axes = ["tp"], shape = [1])
  func.func @decoder_block_dist() {
    // expected-error @+1 {{boundary value needs a static shape, a known element type and a shard of at most 2^63 - 1 bytes}}
    %0 = dist.value "block.in" on @block_mesh split [[]] {lineage = "block.in"} : tensor<4611686018427387904xf32>
    return
  }
}

// -----

// A shard of 2^61 x 4 = 2^63 bytes: fits in u64, not in the i64 size.
module {
  dist.header schema "blueprint.dist" version "1.0" model "sha256:7e7554f439ba870dd69196bb81d71cf67502c954c3d3de251479e2fc9f8ee5ab"
  dist.mesh @block_mesh(axes = ["tp"], shape = [1])
  func.func @decoder_block_dist() {
    // expected-error @+1 {{boundary value needs a static shape, a known element type and a shard of at most 2^63 - 1 bytes}}
    %0 = dist.value "block.in" on @block_mesh split [[]] {lineage = "block.in"} : tensor<2305843009213693952xf32>
    return
  }
}
