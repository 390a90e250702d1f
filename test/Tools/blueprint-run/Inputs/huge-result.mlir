// A 4 GiB result (never written: its pages cost nothing until read).
func.func @huge() -> tensor<1073741824xf32> {
  %e = tensor.empty() : tensor<1073741824xf32>
  return %e : tensor<1073741824xf32>
}
