dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
// -----
dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @m(axes = ["x"], shape = [2])
func.func @f(%x: tensor<4xf16>) {
  // The error is reported at this file's line 7, not the chunk's.
  %y = dist.p2p %x on @m from 1 to 1 phase = forward bytes = 8 {id = "p", lineage = "l"} : tensor<4xf16>
  return
}
