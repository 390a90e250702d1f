func.func @c() -> tensor<4xi32> {
  %0 = arith.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
  return %0 : tensor<4xi32>
}
