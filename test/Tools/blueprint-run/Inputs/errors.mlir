// Programs that fail at run time; errors.test runs each one.
dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["tp"], shape = [4])
func.func private @_bprt_wait(i64) -> i64

// Rank 0 sums, the others take the maximum: mismatched collectives.
func.func @mismatch() -> tensor<4xf32> {
  %r = dist.rank on @world
  %c0 = arith.constant 0 : index
  %x = arith.constant dense<1.0> : tensor<4xf32>
  %first = arith.cmpi eq, %r, %c0 : index
  %y = scf.if %first -> tensor<4xf32> {
    %s = dist.all_reduce %x on @world over [0, 1, 2, 3] reduction = sum phase = forward bytes = 16 {id = "ar_sum", lineage = "l"} : tensor<4xf32>
    scf.yield %s : tensor<4xf32>
  } else {
    %m = dist.all_reduce %x on @world over [0, 1, 2, 3] reduction = max phase = forward bytes = 16 {id = "ar_max", lineage = "l"} : tensor<4xf32>
    scf.yield %m : tensor<4xf32>
  }
  return %y : tensor<4xf32>
}

// Rank 0 lists the participants in another order than the others.
func.func @participants() -> tensor<4xf32> {
  %r = dist.rank on @world
  %c0 = arith.constant 0 : index
  %x = arith.constant dense<1.0> : tensor<4xf32>
  %first = arith.cmpi eq, %r, %c0 : index
  %y = scf.if %first -> tensor<4xf32> {
    %s = dist.all_reduce %x on @world over [0, 1, 2, 3] reduction = sum phase = forward bytes = 16 {id = "ar_fwd", lineage = "l"} : tensor<4xf32>
    scf.yield %s : tensor<4xf32>
  } else {
    %m = dist.all_reduce %x on @world over [3, 2, 1, 0] reduction = sum phase = forward bytes = 16 {id = "ar_rev", lineage = "l"} : tensor<4xf32>
    scf.yield %m : tensor<4xf32>
  }
  return %y : tensor<4xf32>
}

// A wait on a handle the runtime never gave out.
func.func @unknown_handle() {
  %h = arith.constant 42 : i64
  %s = func.call @_bprt_wait(%h) : (i64) -> i64
  return
}

// The all-reduce's handle (the rank's first, 1) is waited on again.
func.func @double_wait() -> tensor<4xf32> {
  %x = arith.constant dense<1.0> : tensor<4xf32>
  %y = dist.all_reduce %x on @world over [0, 1, 2, 3] reduction = sum phase = forward bytes = 16 {id = "ar", lineage = "l"} : tensor<4xf32>
  %h = arith.constant 1 : i64
  %s = func.call @_bprt_wait(%h) : (i64) -> i64
  return %y : tensor<4xf32>
}

// Rank 0 never joins the all-reduce: the others wait until the timeout.
func.func @timeout() -> tensor<4xf32> {
  %r = dist.rank on @world
  %c0 = arith.constant 0 : index
  %x = arith.constant dense<1.0> : tensor<4xf32>
  %first = arith.cmpi eq, %r, %c0 : index
  %y = scf.if %first -> tensor<4xf32> {
    scf.yield %x : tensor<4xf32>
  } else {
    %s = dist.all_reduce %x on @world over [0, 1, 2, 3] reduction = sum phase = forward bytes = 16 {id = "ar_late", lineage = "l"} : tensor<4xf32>
    scf.yield %s : tensor<4xf32>
  }
  return %y : tensor<4xf32>
}

// Two same-shape all-reduces, issued in the other order on rank 0 (op ids
// are unique in a module, so rank 0's are ops of their own). Paired by call
// order alone, every rank got 103 and 301 instead of 4 and 400, with exit
// status 0; the participants now compare the op they run.
func.func @reordered() -> (tensor<4xf32>, tensor<4xf32>) {
  %r = dist.rank on @world
  %c0 = arith.constant 0 : index
  %a = arith.constant dense<1.0> : tensor<4xf32>
  %b = arith.constant dense<100.0> : tensor<4xf32>
  %first = arith.cmpi eq, %r, %c0 : index
  %ya, %yb = scf.if %first -> (tensor<4xf32>, tensor<4xf32>) {
    %sb = dist.all_reduce %b on @world over [0, 1, 2, 3] reduction = sum phase = forward bytes = 16 {id = "ar_b.rank0", lineage = "l"} : tensor<4xf32>
    %sa = dist.all_reduce %a on @world over [0, 1, 2, 3] reduction = sum phase = forward bytes = 16 {id = "ar_a.rank0", lineage = "l"} : tensor<4xf32>
    scf.yield %sa, %sb : tensor<4xf32>, tensor<4xf32>
  } else {
    %sa = dist.all_reduce %a on @world over [0, 1, 2, 3] reduction = sum phase = forward bytes = 16 {id = "ar_a", lineage = "l"} : tensor<4xf32>
    %sb = dist.all_reduce %b on @world over [0, 1, 2, 3] reduction = sum phase = forward bytes = 16 {id = "ar_b", lineage = "l"} : tensor<4xf32>
    scf.yield %sa, %sb : tensor<4xf32>, tensor<4xf32>
  }
  return %ya, %yb : tensor<4xf32>, tensor<4xf32>
}

// Rank 1 skips the first of two all-reduces: the others' first would meet
// its second.
func.func @skipped() -> tensor<4xf32> {
  %r = dist.rank on @world
  %c1 = arith.constant 1 : index
  %a = arith.constant dense<1.0> : tensor<4xf32>
  %skips = arith.cmpi eq, %r, %c1 : index
  %y = scf.if %skips -> tensor<4xf32> {
    scf.yield %a : tensor<4xf32>
  } else {
    %s = dist.all_reduce %a on @world over [0, 1, 2, 3] reduction = sum phase = forward bytes = 16 {id = "ar_first", lineage = "l"} : tensor<4xf32>
    scf.yield %s : tensor<4xf32>
  }
  %z = dist.all_reduce %y on @world over [0, 1, 2, 3] reduction = sum phase = forward bytes = 16 {id = "ar_second", lineage = "l"} : tensor<4xf32>
  return %z : tensor<4xf32>
}

func.func private @abort()
func.func private @exit(i32)

// A failed cf.assert on rank 2; the others then wait for it in an
// all-reduce.
func.func @assert_fails() -> tensor<4xf32> {
  %r = dist.rank on @world
  %c2 = arith.constant 2 : index
  %ok = arith.cmpi ne, %r, %c2 : index
  cf.assert %ok, "rank 2 must not get here"
  %x = arith.constant dense<1.0> : tensor<4xf32>
  %y = dist.all_reduce %x on @world over [0, 1, 2, 3] reduction = sum phase = forward bytes = 16 {id = "ar_after_assert", lineage = "l"} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// Rank 1 calls abort(), rank 3 exit(3); the others finish.
func.func @ends() -> tensor<4xf32> {
  %r = dist.rank on @world
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %is1 = arith.cmpi eq, %r, %c1 : index
  %is3 = arith.cmpi eq, %r, %c3 : index
  scf.if %is1 {
    func.call @abort() : () -> ()
  }
  scf.if %is3 {
    %code = arith.constant 3 : i32
    func.call @exit(%code) : (i32) -> ()
  }
  %x = arith.constant dense<1.0> : tensor<4xf32>
  return %x : tensor<4xf32>
}

// Rank 1 reads through a null pointer.
func.func @crashes() -> tensor<4xf32> {
  %r = dist.rank on @world
  %c1 = arith.constant 1 : index
  %is1 = arith.cmpi eq, %r, %c1 : index
  scf.if %is1 {
    %null = llvm.mlir.zero : !llvm.ptr
    %v = llvm.load volatile %null : !llvm.ptr -> i64
    %s = llvm.mlir.zero : !llvm.ptr
    llvm.store volatile %v, %s : i64, !llvm.ptr
  }
  %x = arith.constant dense<1.0> : tensor<4xf32>
  return %x : tensor<4xf32>
}
