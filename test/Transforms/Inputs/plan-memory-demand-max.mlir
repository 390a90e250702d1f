// read_bytes + write_bytes = 2^63 - 1 exactly: the largest memory demand a
// plan can state (plan-transformer-overflow.mlir).
module {
  dist.header schema "blueprint.dist" version "1.0" model "sha256:7e7554f439ba870dd69196bb81d71cf67502c954c3d3de251479e2fc9f8ee5ab"
  dist.mesh @block_mesh(axes = ["pp", "tp_kv", "tp_rep"], shape = [1, 4, 1])
  func.func @decoder_block_inference_dist() {
    %0 = dist.value "prompt.in" on @block_mesh split [[], [], []] {lineage = "prompt.in"} : tensor<8x512x4096xf16>
    %1 = dist.compute "mlp.up.decode" on @block_mesh phase = decode matrix matmul(%0 : tensor<8x512x4096xf16>) ops = 1 read = 1 write = 9223372036854775806 {lineage = "decode"} : !dist.token
    return
  }
}
