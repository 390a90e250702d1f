dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @not_covered(%x: tensor<8xf32>) -> tensor<2xf32> {
  %rs = dist.reduce_scatter %x on @tp over [0, 1, 2, 3] reduction = sum phase = forward bytes = 32 {id = "rs", lineage = "l"} : tensor<8xf32> -> tensor<2xf32>
  return %rs : tensor<2xf32>
}
