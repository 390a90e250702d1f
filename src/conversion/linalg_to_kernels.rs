//! `convert-linalg-matmul-to-kernels`: after bufferization, the f32
//! `linalg.matmul` and `linalg.batch_matmul` ops (with their default
//! maps) become calls of the runtime's matrix-product kernel
//! (`_bprt_matmul_f32`, declared once through the runtime's entry-point
//! table), which honours every operand's strides. The rest of `linalg`
//! lowers to loops as before; products are where the time goes.

use melior::ir::{block::BlockLike, operation::OperationBuilder, operation::OperationLike, OperationRef, RegionLike, Value, ValueLike};

use crate::{
    ir::{
        read::{collect_ops, name_of, str_attr},
        rewrite::{erase, identifier, known_attribute, known_type},
    },
    runtime::interface::{ElementType, RuntimeFunction},
};

crate::ir::pass_macro::external_pass!(
    "ConvertLinalgMatmulToKernels",
    "convert-linalg-matmul-to-kernels",
    "Replace f32 linalg.matmul / linalg.batch_matmul on memrefs by calls of the runtime's strided matrix-product kernel",
    run
);

fn run(module: OperationRef, _pass: melior::pass::ExternalPass) {
    let products: Vec<OperationRef> = collect_ops(module).into_iter().filter(|op| is_kernel_product(*op)).collect();
    if products.is_empty() {
        return;
    }
    let kernel = RuntimeFunction::Matmul(ElementType::F32);
    let symbol = kernel.symbol();
    declare(module, &symbol, &kernel.function_type());
    for op in products {
        let unranked = known_type(op, "memref<*xf32>");
        let block = match op.block() {
            Some(b) => b,
            None => continue,
        };
        let mut args: Vec<Value> = Vec::new();
        for operand in op.operands() {
            let cast = OperationBuilder::new("memref.cast", op.location()).add_operands(&[operand]).add_results(&[unranked]).build();
            let Ok(cast) = cast else { return };
            let cast = block.insert_operation_before(op, cast);
            if let Ok(result) = cast.result(0) {
                args.push(result.into());
            }
        }
        let call = OperationBuilder::new("func.call", op.location())
            .add_operands(&args)
            .add_results(&[known_type(op, "i64")])
            .add_attributes(&[(identifier(op, "callee"), known_attribute(op, &format!("@{symbol}")))])
            .build();
        if let Ok(call) = call {
            block.insert_operation_before(op, call);
            erase(op);
        }
    }
}

/// A product the kernel computes: `C += A B` on f32 memrefs of rank 2, or
/// batched of rank 3, with the op's default maps.
fn is_kernel_product(op: OperationRef) -> bool {
    let rank = match name_of(op).as_str() {
        "linalg.matmul" => 2,
        "linalg.batch_matmul" => 3,
        _ => return false,
    };
    // The default maps (a transposing or broadcasting product keeps its loops).
    let default = if rank == 2 {
        "[affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>]"
    } else {
        "[affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]"
    };
    let default_maps = op.attribute("indexing_maps").map_or(true, |maps| crate::ir::read::attribute_text(maps) == default);
    default_maps && op.operand_count() == 3 && op.result_count() == 0 && op.operands().all(|v| f32_memref_rank(v.r#type()) == Some(rank))
}

/// The rank of an f32 memref (any layout), or `None`.
fn f32_memref_rank(ty: melior::ir::Type) -> Option<usize> {
    use melior::ir::{r#type::ShapedTypeLike, TypeLike};
    let memref = melior::ir::r#type::MemRefType::try_from(ty).ok()?;
    memref.element().is_f32().then(|| memref.rank())
}

/// `func.func private @symbol` of `function_type`, once.
fn declare(module: OperationRef, symbol: &str, function_type: &str) {
    if collect_ops(module).iter().any(|op| name_of(*op) == "func.func" && str_attr(*op, "sym_name") == Some(symbol)) {
        return;
    }
    let Some(body) = module.region(0).ok().and_then(|r| r.first_block()) else { return };
    let Some(first) = body.first_operation() else { return };
    let declaration = OperationBuilder::new("func.func", module.location())
        .add_attributes(&[
            (identifier(first, "sym_name"), known_attribute(first, &format!("\"{symbol}\""))),
            (identifier(first, "function_type"), known_attribute(first, function_type)),
            (identifier(first, "sym_visibility"), known_attribute(first, "\"private\"")),
        ])
        .add_regions([melior::ir::Region::new()])
        .build();
    if let Ok(declaration) = declaration {
        body.insert_operation_before(first, declaration);
    }
}
