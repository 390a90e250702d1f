use super::lookup::{issue_queue_time, Table};
use super::*;

const H200: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/systems/kernels/h200-sxm-141g.kernels.json");
/// Kernels measured on another H200 by another harness (per-call CUDA
/// events, the GPU idle between calls): `test/Inputs/h200/README.md`.
const HELD_OUT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/test/Inputs/h200/kernels.json");

fn h200() -> KernelProfile {
    KernelProfile::from_json(&std::fs::read_to_string(H200).expect("shipped profile")).expect("valid profile")
}

fn point(coords: &[u64], device_s: f64, host_s: f64) -> Point {
    Point { coords: coords.to_vec(), cost: Cost { device_s, host_s } }
}

#[test]
fn the_shipped_h200_profile_reads_and_says_what_measured_it() {
    let p = h200();
    assert_eq!(p.provenance().device, "NVIDIA H200");
    assert_eq!(p.provenance().dtype, Datatype::Bfloat16);
    assert!(p.provenance().incomplete.is_empty());
    let c = p.counts();
    assert_eq!(c.gemm, 3 * 808 + 27, "808 bf16 shapes in three layouts and 27 float8");
    assert_eq!(c.bmm, 3 * 126);
    assert!(c.attention > 400 && c.vector > 150 && c.adam == 8, "{c:?}");
}

#[test]
fn a_measured_shape_is_priced_at_its_measurement() {
    let json = std::fs::read_to_string(H200).expect("profile");
    let raw: serde_json::Value = serde_json::from_str(&json).expect("json");
    let p = h200();
    for layout in Layout::ALL {
        for row in raw["kernels"]["gemm"]["bfloat16"][layout.name()].as_array().expect("rows").iter().step_by(37) {
            let r: Vec<f64> = row.as_array().expect("row").iter().map(|v| v.as_f64().expect("number")).collect();
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let cost = p.gemm(Datatype::Bfloat16, layout, r[0] as u64, r[1] as u64, r[2] as u64).expect("table");
            assert!((cost.device_s / r[3] - 1.0).abs() < 1e-9, "{layout:?} {r:?}: {cost:?}");
            assert!((cost.host_s / r[4] - 1.0).abs() < 1e-9);
        }
    }
}

#[test]
fn interpolation_is_exact_for_a_constant_throughput_and_clamps_outside_the_grid() {
    // 1e12 FLOP/s everywhere on a 2x2x2 grid: any shape inside or beyond
    // takes 2mnk / 1e12 s; below the smallest shape, the smallest time.
    let mut points = Vec::new();
    for m in [64, 256] {
        for n in [128, 1024] {
            for k in [128, 512] {
                #[allow(clippy::cast_precision_loss)]
                let t = 2.0 * (m * n * k) as f64 / 1e12;
                points.push(point(&[m, n, k], t, 1e-5));
            }
        }
    }
    let work = |c: &[u64]| c.iter().map(|&v| v as f64).product::<f64>();
    let at = |points: &[Point], m: u64, n: u64, k: u64| Table::new(points.to_vec()).price(&[m, n, k], work).expect("cost").device_s;
    assert!((at(&points, 100, 300, 200) - 2.0 * 100.0 * 300.0 * 200.0 / 1e12).abs() < 1e-18);
    assert!((at(&points, 4096, 4096, 4096) - 2.0 * 4096f64.powi(3) / 1e12).abs() < 1e-15);
    assert_eq!(at(&points, 1, 1, 1), 2.0 * 64.0 * 128.0 * 128.0 / 1e12);
    // A bracketing corner that was not measured drops out.
    points.retain(|p| p.coords != [256, 1024, 512]);
    assert!((at(&points, 200, 1000, 500) - 2.0 * 200.0 * 1000.0 * 500.0 / 1e12).abs() < 1e-15);
}

#[test]
fn interpolation_between_two_throughputs_is_geometric_in_log_size() {
    // 1e3 elements at 1e9 elems/s, 1e5 at 1e11: 1e4 sits halfway in log,
    // so 1e10 elems/s, 1 us.
    let points = [point(&[1000], 1e-6, 2e-5), point(&[100_000], 1e-6, 2e-5)];
    let cost = Table::new(points.to_vec()).price(&[10_000], |c| c[0] as f64).expect("cost");
    assert!((cost.device_s - 1e-6).abs() < 1e-15, "{cost:?}");
    assert!((cost.host_s - 2e-5).abs() < 1e-15);
}

#[test]
fn eager_issue_waits_for_the_host_or_the_device_whichever_is_later() {
    // Host-bound: three 1 us kernels issued every 10 us end at 31 us.
    let small = Cost { device_s: 1e-6, host_s: 1e-5 };
    assert!((issue_queue_time(&[small; 3]) - 31e-6).abs() < 1e-15);
    // Device-bound: 1 ms kernels issued every 10 us end at 10 us + 3 ms.
    let big = Cost { device_s: 1e-3, host_s: 1e-5 };
    assert!((issue_queue_time(&[big; 3]) - (1e-5 + 3e-3)).abs() < 1e-15);
    assert_eq!(issue_queue_time(&[]), 0.0);
}

/// Held-out check: the GEMMs of `test/Inputs/h200/kernels.json` (Transformer
/// shapes, most of them off the power-of-two grid: n, k of 12288, 14336,
/// 28672, 36864) were measured on another H200 by another harness. Where a
/// GEMM is long enough that the launch the other harness includes does not
/// matter (>= 150 us), the profile's interpolation prices it within 20 %
/// (measured: max 18 % at m = 256, mean 5 %; the two machines' own
/// run-to-run spread is 2-12 %, test/Inputs/h200/README.md).
#[test]
fn interpolated_gemms_match_held_out_measurements_of_other_shapes() {
    let p = h200();
    let held: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(HELD_OUT).expect("held out")).expect("json");
    let mut errors = Vec::new();
    for row in held["gemm"].as_array().expect("gemm") {
        if row["dtype"] != "bfloat16" || row["median_s"].as_f64().expect("s") < 150e-6 {
            continue;
        }
        let dim = |k: &str| row[k].as_u64().expect("dim");
        let measured = row["median_s"].as_f64().expect("s");
        let cost = p.gemm(Datatype::Bfloat16, Layout::Nt, dim("m"), dim("n"), dim("k")).expect("table");
        errors.push((cost.device_s / measured - 1.0, dim("m"), dim("n"), dim("k")));
    }
    assert!(errors.len() >= 20, "{} shapes", errors.len());
    let mean = errors.iter().map(|e| e.0.abs()).sum::<f64>() / errors.len() as f64;
    for e in &errors {
        assert!(e.0.abs() < 0.2, "{e:?}");
    }
    assert!(mean < 0.07, "mean {mean}");
}

#[test]
fn attention_and_vector_lookups_cover_the_block_shapes() {
    let p = h200();
    // A measured shape is priced at its rows: those of one (seq,
    // batch·heads, head_dim) (grouped KV heads, or batch traded for heads)
    // at the geometric mean of their times.
    let raw: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(H200).expect("profile")).expect("json");
    let rows: Vec<&serde_json::Value> = raw["kernels"]["attention"]["bfloat16"]
        .as_array()
        .expect("rows")
        .iter()
        .filter(|r| {
            r["seq"] == 8192
                && r["batch"].as_u64().expect("b") * r["heads"].as_u64().expect("h") == 32
                && r["head_dim"] == 128
                && r["dropout"] == 0.0
        })
        .collect();
    assert_eq!(rows.len(), 4, "1 x 32 heads (32 or 8 KV heads), 4 x 8 heads (8 or 1)");
    let geomean = |k: &str| (rows.iter().map(|r| r[k].as_f64().expect("s").ln()).sum::<f64>() / 4.0).exp();
    for kv_heads in [32, 8] {
        let shape = AttentionShape { batch: 1, heads: 32, kv_heads, seq: 8192, head_dim: 128, causal: true, dropout: false };
        let (f, b) = p.attention(Datatype::Bfloat16, &shape).expect("attention");
        assert!((f.device_s / geomean("fwd_s") - 1.0).abs() < 1e-9, "{f:?}");
        assert!((b.device_s / geomean("bwd_s") - 1.0).abs() < 1e-9, "{b:?}");
    }
    // Head size 80 (GPT h2560, 32 heads) lies between the measured 64 and 128.
    let at = |d| {
        p.attention(
            Datatype::Bfloat16,
            &AttentionShape { batch: 1, heads: 32, kv_heads: 32, seq: 2048, head_dim: d, causal: true, dropout: true },
        )
        .expect("attention")
        .0
        .device_s
    };
    assert!(at(64) < at(80) && at(80) < at(128));
    let (ln, ln_bwd) = p.vector(Datatype::Bfloat16, VectorOp::LayerNorm, 1 << 24).expect("layernorm");
    assert!(ln.device_s > 0.0 && ln_bwd.expect("backward").device_s > ln.device_s);
    assert!(matches!(p.vector(Datatype::Float32, VectorOp::Gelu, 10), Err(LookupError::NoTable { .. })));
    assert!(p.adam(7_000_000_000).expect("adam").device_s > 0.05);
}

fn minimal(kernels: &str) -> String {
    format!(
        r#"{{"format": "{FORMAT}", "provenance": {{"tool": "t", "date": "d", "backend": "numpy", "device_type": "cpu", "device": "x", "dtype": "float32"}},
            "kernels": {{"dispatch": {{"tiny_kernel_s": 1e-6, "host_s": 1e-6}}{kernels}}}}}"#
    )
}

#[test]
fn bad_profiles_are_refused_naming_the_field() {
    let err = |json: &str| KernelProfile::from_json(json).expect_err("refused").to_string();
    assert!(KernelProfile::from_json(&minimal("")).is_ok());
    assert!(err("{").contains("invalid kernel profile JSON"));
    assert!(err(&minimal("").replace(FORMAT, "calculon")).contains("format is 'calculon'"));
    let e = err(&minimal(r#", "gemm": {"float32": {"nt": [[1, 2, 3, -1e-6, 1e-6]]}}"#));
    assert!(e.contains("kernels.gemm.float32.nt[0][3]") && e.contains("positive"), "{e}");
    let e = err(&minimal(r#", "gemm": {"float32": {"nt": [[1, 2.5, 3, 1e-6, 1e-6]]}}"#));
    assert!(e.contains("kernels.gemm.float32.nt[0][1]") && e.contains("whole number"), "{e}");
    let e = err(&minimal(r#", "gemm": {"float32": {"nt": [[1, 2, 1e-6, 1e-6]]}}"#));
    assert!(e.contains("kernels.gemm.float32.nt[0]") && e.contains("4 entries, expected 5"), "{e}");
    let e = err(&minimal(r#", "gemm": {"float32": {"nt": [[1, 2, 3, 1e-6, 1e-6], [1, 2, 3, 2e-6, 1e-6]]}}"#));
    assert!(e.contains("kernels.gemm.float32.nt[1]") && e.contains("twice"), "{e}");
    let e = err(&minimal(r#", "gemm": {"int4": {}}"#));
    assert!(e.contains("kernels.gemm.int4") && e.contains("unknown datatype"), "{e}");
    let e = err(&minimal(r#", "vector": {"float32": {"sigmoid": []}}"#));
    assert!(e.contains("kernels.vector.float32.sigmoid") && e.contains("unknown vector op"), "{e}");
    let e = err(&minimal(
        r#", "attention": {"float32": [{"batch": 1, "heads": 6, "kv_heads": 4, "seq": 8, "head_dim": 8, "causal": true, "dropout": 0, "fwd_s": 1e-6, "fwd_host_s": 1e-6}]}"#,
    ));
    assert!(e.contains("kernels.attention.float32[0]") && e.contains("not a multiple"), "{e}");
    let e = err(&minimal(r#", "collectives": {"library": "gloo", "ranks": 2, "curves": {"all_reduce": [[1024, 1e99]]}}"#));
    assert!(e.contains("kernels.collectives.curves.all_reduce[0][1]"), "{e}");
    let e = err(&minimal(r#", "tpu": {}"#));
    assert!(e.contains("unknown field `tpu`"), "{e}");
}

/// Held-out check in a block (reported, with loose bounds): the backward GEMMs of the traced blocks
/// (`test/Inputs/h200/block-traces.json`: aten::mm ops with their shapes and
/// device time, run inside a forward + backward step on another H200) against
/// the profile. `[[a, b], [b, c]]` is a weight gradient `dW = dYᵀ·X` (layout
/// tn, forward `(m, n, k) = (b, a, c)`) when `b` is the block's token count,
/// else an input gradient `dX = dY·W` (nn, `(a, b, c)`).
#[test]
fn in_block_gemms_match_the_profile() {
    let p = h200();
    let traces: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/test/Inputs/h200/block-traces.json")).expect("traces"),
    )
    .expect("json");
    let mut errors = Vec::new();
    for (name, block) in traces["blocks"].as_object().expect("blocks") {
        let c = &block["config"];
        let tokens = c["seq"].as_u64().expect("seq") * c["mb"].as_u64().expect("mb");
        if tokens == c["hidden"].as_u64().expect("hidden") {
            continue; // ambiguous layout
        }
        for op in block["top_ops"].as_array().expect("ops").iter().filter(|o| o["op"] == "aten::mm") {
            let s = &op["shapes"];
            let (a, b, c) = (s[0][0].as_u64().expect("a"), s[0][1].as_u64().expect("b"), s[1][1].as_u64().expect("c"));
            let cost =
                if b == tokens { p.gemm(Datatype::Bfloat16, Layout::Tn, b, a, c) } else { p.gemm(Datatype::Bfloat16, Layout::Nn, a, b, c) }
                    .expect("table");
            let measured = op["device_us"].as_f64().expect("us") * 1e-6;
            errors.push((cost.device_s / measured - 1.0, name.clone(), a, b, c));
        }
    }
    assert!(errors.len() >= 20, "{}", errors.len());
    let mean = errors.iter().map(|e| e.0.abs()).sum::<f64>() / errors.len() as f64;
    // Measured: the profile is 0-23 % slower than the block (mean 11.8 %
    // over 26 GEMMs; 4 % on Llama-3-8B's, 16 % on the 2,048-token GPT
    // blocks'): it clears the L2 before every call, while in a block the
    // activation operand of a backward GEMM was just written and is still
    // cached (test/Inputs/h200/README.md).
    for e in &errors {
        assert!(e.0 > -0.1 && e.0 < 0.25, "{e:?}");
    }
    assert!(mean < 0.13, "mean {mean}");
}
