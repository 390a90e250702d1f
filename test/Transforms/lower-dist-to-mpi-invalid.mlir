// What the upstream mpi dialect cannot express is a located diagnostic
// naming the runtime lowering, and the module is left unchanged.
// RUN: blueprint-opt %s --split-input-file --verify-diagnostics --lower-dist-to-mpi

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @not_covered(%x: tensor<8xf32>, %h: tensor<4xf16>, %d: tensor<?xf32>) -> (tensor<2xf32>, tensor<4xf16>, tensor<?xf32>, tensor<8xf32>) {
  // expected-error @+1 {{'dist.reduce_scatter' op is not covered: lower-dist-to-mpi covers synchronous all-reduce and p2p and the rank queries (LLVM 22's mpi dialect); use lower-dist-to-runtime}}
  %rs = dist.reduce_scatter %x on @tp over [0, 1, 2, 3] reduction = sum phase = forward bytes = 32 {id = "rs", lineage = "l"} : tensor<8xf32> -> tensor<2xf32>
  // expected-error @+1 {{'dist.all_reduce' op communicates f16, which the mpi dialect's lowering does not support (f32, f64, i8 .. i64)}}
  %a = dist.all_reduce %h on @tp over [0, 1, 2, 3] reduction = sum phase = forward bytes = 8 {id = "a", lineage = "l"} : tensor<4xf16>
  // expected-error @+1 {{'dist.all_reduce' op communicates tensor<?xf32>; lower-dist-to-mpi needs a static shape without encoding}}
  %b = dist.all_reduce %d on @tp over [0, 1, 2, 3] reduction = sum phase = forward bytes = 8 {id = "b", lineage = "l"} : tensor<?xf32>
  // expected-error @+1 {{'dist.all_reduce' op runs over [0, 1]; lower-dist-to-mpi needs the whole mesh in rank order (0 .. 3) on MPI_COMM_WORLD}}
  %c = dist.all_reduce %x on @tp over [0, 1] reduction = sum phase = forward bytes = 32 {id = "c", lineage = "l"} : tensor<8xf32>
  return %rs, %a, %b, %c : tensor<2xf32>, tensor<4xf16>, tensor<?xf32>, tensor<8xf32>
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [4])
func.func @async(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'dist.all_reduce_start' op is not covered}}
  %h, %y = dist.all_reduce_start %x on @tp over [0, 1, 2, 3] reduction = sum phase = forward bytes = 32 {id = "ar", lineage = "l"} : tensor<8xf32>
  // expected-error @+1 {{'dist.wait' op is not covered}}
  dist.wait %h
  return %y : tensor<8xf32>
}

// -----

// More elements than one MPI message counts (its count is a C int).
dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @tp(axes = ["tp"], shape = [2])
func.func @too_large(%x: tensor<4611686018427387904x3xf64>) -> tensor<4611686018427387904x3xf64> {
  // expected-error @+1 {{'dist.all_reduce' op communicates tensor<4611686018427387904x3xf64>, more elements than one MPI message counts (2^31 - 1); split the transfer}}
  %a = dist.all_reduce %x on @tp over [0, 1] reduction = sum phase = forward bytes = 8 {id = "a", lineage = "l"} : tensor<4611686018427387904x3xf64>
  return %a : tensor<4611686018427387904x3xf64>
}
