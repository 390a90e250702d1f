"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
// -----
"dist.header"() {schema_name = "blueprint.dist", schema_version = "1.0", model_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"} : () -> ()
"dist.mesh"() {sym_name = "m", axes = ["x"], shape = array<i64: 2>} : () -> ()
func.func @f(%x: tensor<4xf16>) {
  // The error is reported at this file's line 7, not the chunk's.
  %y = "dist.p2p"(%x) {id = "p", mesh = @m, phase = "forward", lineage = "l", source = 1 : i64, dest = 1 : i64, message_bytes = 8 : i64} : (tensor<4xf16>) -> tensor<4xf16>
  return
}
