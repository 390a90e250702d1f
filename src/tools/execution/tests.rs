//! Execution end to end: `dist` programs over 4 logical ranks go through
//! dist-async, dist-sink-waits, lower-dist-to-runtime and the upstream
//! passes to the LLVM dialect, are JIT-compiled, and run on 4 in-process
//! ranks against the runtime; every rank's result is compared with the same
//! computation done directly.

use std::ffi::c_void;

use super::{run_pipeline, Jit, TO_LLVM_PIPELINE};
use crate::{
    ir::{context::create_context, diagnostics::DiagnosticSink},
    runtime::{symbols, OwnedMemRef, World},
    tools::opt::parse_module,
};

const RANKS: usize = 4;

const HEADER: &str = r#"dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["tp"], shape = [4])
"#;

/// Compiles `program` (a dist module body) to native code; returns the JIT
/// and the address of each `_mlir_ciface_<name>`.
fn compile(program: &str, functions: &[&str]) -> (Jit, Vec<usize>) {
    let context = create_context();
    let sink = DiagnosticSink::attach(&context);
    let text = format!("{HEADER}{program}");
    let mut module = parse_module(&context, &sink, text.as_bytes(), "program").unwrap_or_else(|| panic!("{:?}", sink.take()));
    if let Err(e) = run_pipeline(&context, &mut module, TO_LLVM_PIPELINE) {
        panic!("{e}: {:?}", sink.take());
    }
    assert!(!module.as_operation().to_string().contains("dist."), "dist ops left after lowering");
    let jit = Jit::new(&module, &symbols()).unwrap_or_else(|e| panic!("{e}: {:?}", sink.take()));
    let addresses = functions.iter().map(|f| jit.lookup(&format!("_mlir_ciface_{f}")).expect("compiled function") as usize).collect();
    // The engine owns the code; the module and context may go.
    (jit, addresses)
}

/// A tensor-parallel linear layer: each rank multiplies its column block of
/// X by its row block of W, and an all-reduce sums the partial products.
#[test]
fn tensor_parallel_linear_layer() {
    let program = r#"
func.func @tp_linear(%x: memref<8x16xf32>, %w: memref<16x16xf32>, %out: memref<8x16xf32>) attributes {llvm.emit_c_interface} {
  %xt = bufferization.to_tensor %x restrict : memref<8x16xf32> to tensor<8x16xf32>
  %wt = bufferization.to_tensor %w restrict : memref<16x16xf32> to tensor<16x16xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %p = linalg.matmul ins(%xt, %wt : tensor<8x16xf32>, tensor<16x16xf32>) outs(%init : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = dist.all_reduce %p on @world over [0, 1, 2, 3] reduction = sum phase = forward bytes = 512 {id = "ar", lineage = "linear"} : tensor<8x16xf32>
  %two = arith.constant dense<2.0> : tensor<8x16xf32>
  %z = arith.mulf %y, %two : tensor<8x16xf32>
  bufferization.materialize_in_destination %z in restrict writable %out : (tensor<8x16xf32>, memref<8x16xf32>) -> ()
  return
}
"#;
    let (_jit, addresses) = compile(program, &["tp_linear"]);
    type Linear = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_void);
    // Global X [8, 64] and W [64, 16], small integers so f32 sums are exact.
    let x = |i: usize, k: usize| ((i * 7 + k * 3) % 11) as f32 - 5.0;
    let w = |k: usize, j: usize| ((k * 5 + j * 2) % 7) as f32 - 3.0;
    let expected: Vec<f32> = (0..8).flat_map(|i| (0..16).map(move |j| 2.0 * (0..64).map(|k| x(i, k) * w(k, j)).sum::<f32>())).collect();
    let world = World::new(RANKS);
    let results = world.run(|rank| {
        let xs: Vec<f32> = (0..8).flat_map(|i| (0..16).map(move |k| x(i, rank * 16 + k))).collect();
        let ws: Vec<f32> = (0..16).flat_map(|k| (0..16).map(move |j| w(rank * 16 + k, j))).collect();
        let mut xm = OwnedMemRef::new(&[8, 16], xs);
        let mut wm = OwnedMemRef::new(&[16, 16], ws);
        let mut out = OwnedMemRef::filled(&[8, 16], f32::NAN);
        // SAFETY: the address is `_mlir_ciface_tp_linear`, which takes three
        // ranked memref descriptors of these shapes.
        let f: Linear = unsafe { std::mem::transmute::<usize, Linear>(addresses[0]) };
        unsafe { f(xm.desc(), wm.desc(), out.desc()) };
        out.to_vec()
    });
    assert!(world.errors().is_empty(), "{:?}", world.errors());
    for (rank, result) in results.iter().enumerate() {
        assert_eq!(result, &expected, "rank {rank}");
    }
    assert_eq!(world.open_exchanges(), 0, "every exchange is consumed");
}

/// A distributed 8x6 array, split by rows, reshaped to 48 elements split in
/// four; and an 8x8 array transposed with axes [1, 0].
#[test]
fn redistribution_copies() {
    let program = r#"
func.func @reshape(%l: memref<2x6xi64>, %off: index, %noff: index, %out: memref<12xi64>) attributes {llvm.emit_c_interface} {
  %lt = bufferization.to_tensor %l restrict : memref<2x6xi64> to tensor<2x6xi64>
  %c0 = arith.constant 0 : index
  %c6 = arith.constant 6 : index
  %c8 = arith.constant 8 : index
  %c12 = arith.constant 12 : index
  %c48 = arith.constant 48 : index
  %h, %n = dist.copy_reshape %lt g_shape %c8, %c6 l_offs %off, %c0 to n_g_shape %c48 n_offs %noff n_shape %c12 {team = 0 : i64} : tensor<2x6xi64> -> tensor<?xi64>
  dist.wait %h
  %s = tensor.cast %n : tensor<?xi64> to tensor<12xi64>
  bufferization.materialize_in_destination %s in restrict writable %out : (tensor<12xi64>, memref<12xi64>) -> ()
  return
}
func.func @transpose(%l: memref<2x8xf64>, %off: index, %out: memref<2x8xf64>) attributes {llvm.emit_c_interface} {
  %lt = bufferization.to_tensor %l restrict : memref<2x8xf64> to tensor<2x8xf64>
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %h, %n = dist.copy_permute %lt g_shape %c8, %c8 l_offs %off, %c0 n_offs %off, %c0 n_shape %c2, %c8 axes [1, 0] {team = @world} : tensor<2x8xf64> -> tensor<2x8xf64>
  dist.wait %h
  bufferization.materialize_in_destination %n in restrict writable %out : (tensor<2x8xf64>, memref<2x8xf64>) -> ()
  return
}
"#;
    let (_jit, addresses) = compile(program, &["reshape", "transpose"]);
    type Reshape = unsafe extern "C" fn(*mut c_void, i64, i64, *mut c_void);
    type Transpose = unsafe extern "C" fn(*mut c_void, i64, *mut c_void);
    let world = World::new(RANKS);
    let results = world.run(|rank| {
        let r = rank as i64;
        // Rows 2r, 2r+1 of the 8x6 array whose elements count 0..48.
        let mut local = OwnedMemRef::new(&[2, 6], (12 * r..12 * r + 12).collect());
        let mut reshaped = OwnedMemRef::filled(&[12], -1i64);
        // Rows 2r, 2r+1 of the 8x8 array a[i][j] = 10 i + j.
        let global = |i: i64, j: i64| (10 * i + j) as f64;
        let mut block = OwnedMemRef::new(&[2, 8], (0..16).map(|k| global(2 * r + k / 8, k % 8)).collect());
        let mut transposed = OwnedMemRef::filled(&[2, 8], f64::NAN);
        // SAFETY: the addresses are the two compiled ciface functions with
        // exactly these argument lists.
        unsafe {
            let reshape: Reshape = std::mem::transmute::<usize, Reshape>(addresses[0]);
            reshape(local.desc(), 2 * r, 12 * r, reshaped.desc());
            let transpose: Transpose = std::mem::transmute::<usize, Transpose>(addresses[1]);
            transpose(block.desc(), 2 * r, transposed.desc());
        }
        (reshaped.to_vec(), transposed.to_vec())
    });
    assert!(world.errors().is_empty(), "{:?}", world.errors());
    for (rank, (reshaped, transposed)) in results.iter().enumerate() {
        let r = rank as i64;
        assert_eq!(reshaped, &(12 * r..12 * r + 12).collect::<Vec<_>>(), "reshape on rank {rank}");
        // Row i of the transpose is column i of the original.
        let expected: Vec<f64> = (0..16).map(|k| (10 * (k % 8) + 2 * r + k / 8) as f64).collect();
        assert_eq!(transposed, &expected, "transpose on rank {rank}");
    }
}

#[test]
fn a_module_not_lowered_to_llvm_is_refused_not_run() {
    let context = create_context();
    let sink = DiagnosticSink::attach(&context);
    let module = parse_module(&context, &sink, b"func.func @f() { return }", "m").expect("parses");
    assert!(matches!(Jit::new(&module, &[]), Err(super::ExecutionError::Jit)));
}
