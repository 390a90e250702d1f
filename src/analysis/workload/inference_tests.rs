//! Oracle gates and structural tests of the static inference algebra.

use std::collections::HashSet;

use serde_json::{json, Value};

use super::*;

const CALCULON_ORACLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/test/oracles/inference/prefill-calculon.json");
const GENZ_ORACLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/test/oracles/inference/llama2-genz.json");

fn oracle_cases(path: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|err| panic!("cannot read oracle {path}: {err}"));
    let doc: Value = serde_json::from_str(&text).expect("oracle is JSON");
    doc["cases"].as_array().expect("cases array").clone()
}

/// The case's `{name, model, workload, mapping}` as an inference spec.
fn case_spec(case: &Value) -> InferenceSpec {
    let doc = json!({
        "name": case["name"],
        "model": case["model"],
        "workload": case["workload"],
        "mapping": case["mapping"],
    });
    InferenceSpec::from_json(&doc.to_string()).unwrap_or_else(|err| panic!("{}: {err}", case["name"]))
}

/// Compares every key of `expected` with the named `fields`; unknown or
/// missing keys are mismatches too.
fn compare(label: &str, fields: &[(&'static str, u64)], expected: &Value, report: &mut Vec<String>) {
    let expected = expected.as_object().unwrap_or_else(|| panic!("{label}: oracle object"));
    let names: HashSet<&str> = fields.iter().map(|(n, _)| *n).collect();
    for key in expected.keys() {
        if !names.contains(key.as_str()) {
            report.push(format!("{label}: oracle field {key} is not derived"));
        }
    }
    for (name, got) in fields {
        match expected.get(*name).and_then(Value::as_u64) {
            Some(want) if want == *got => {}
            Some(want) => report.push(format!("{label}.{name}: derived {got}, oracle {want}")),
            None => report.push(format!("{label}.{name}: missing in oracle")),
        }
    }
}

/// Llama-2-7B exact shapes at TP 4, batch 8 (the second `GenZ` case).
fn llama() -> InferenceSpec {
    InferenceSpec::from_json(
        &json!({
            "model": {
                "hidden": 4096, "ffn_hidden": 11008, "heads": 32, "head_dim": 128,
                "kv_heads": 32, "blocks": 32, "gated_mlp": true, "vocab": 32000
            },
            "workload": {
                "batch": 8, "prompt_tokens": 512, "generated_tokens": 64,
                "datatype": "float16"
            },
            "mapping": { "tp": 4 }
        })
        .to_string(),
    )
    .expect("llama spec")
}

fn with(edit: impl FnOnce(&mut InferenceSpec)) -> InferenceSpec {
    let mut spec = llama();
    edit(&mut spec);
    spec
}

fn error_of(edit: impl FnOnce(&mut InferenceSpec)) -> SpecError {
    with(edit).validate().expect_err("spec must be rejected")
}

fn prefill(spec: &InferenceSpec) -> InferencePass {
    derive_prefill_pass(spec).expect("valid spec derives")
}

fn decode(spec: &InferenceSpec, context: u64) -> InferencePass {
    derive_decode_pass(spec, context).expect("valid decode step")
}

fn facts(pass: &InferencePass) -> InferencePassFacts {
    InferencePassFacts::from_pass(pass)
}

fn one<'a>(pass: &'a InferencePass, source: &'a str) -> &'a PrimitiveInvocation {
    let mut found = pass.derivation.from_source(source);
    let inv = found.next().unwrap_or_else(|| panic!("no {source}"));
    assert!(found.next().is_none(), "{source} twice");
    inv
}

// ---------------------------------------------------------------- oracle gates

#[test]
fn calculon_prefill_oracle_matches_exactly() {
    let cases = oracle_cases(CALCULON_ORACLE);
    assert_eq!(cases.len(), 3);
    let mut report = Vec::new();
    for case in &cases {
        let spec = case_spec(case);
        assert_eq!(spec.workload.phase, Some(InferencePhase::Prefill));
        let got = InferenceFacts::from_spec(&spec).expect("facts");
        assert_eq!(got.decode_at_final_context, None);
        let label = case["name"].as_str().expect("name");
        compare(label, &got.prefill.calculon_fields(), &case["block"], &mut report);
    }
    assert!(report.is_empty(), "oracle mismatches:\n{}", report.join("\n"));
}

#[test]
fn genz_llama2_oracle_matches_exactly() {
    let cases = oracle_cases(GENZ_ORACLE);
    assert_eq!(cases.len(), 2);
    let mut report = Vec::new();
    for case in &cases {
        let spec = case_spec(case);
        let got = InferenceFacts::from_spec(&spec).expect("facts");
        let label = case["name"].as_str().expect("name");
        compare(&format!("{label}.prefill"), &got.prefill.genz_fields(), &case["prefill"], &mut report);
        match got.decode_at_final_context {
            Some(step) => {
                assert_eq!(step.context_tokens, spec.workload.prompt_tokens + spec.workload.generated_tokens);
                compare(&format!("{label}.decode_at_final_context"), &step.genz_fields(), &case["decode_at_final_context"], &mut report);
            }
            None => report.push(format!("{label}: no decode step derived")),
        }
    }
    assert!(report.is_empty(), "oracle mismatches:\n{}", report.join("\n"));
}

#[test]
fn oracle_case_objects_are_not_whole_specs() {
    // Whole case objects carry oracle results, which a spec must refuse
    // rather than silently ignore.
    let results = ["block", "prefill", "decode_at_final_context"];
    for path in [CALCULON_ORACLE, GENZ_ORACLE] {
        for case in oracle_cases(path) {
            match InferenceSpec::from_json(&case.to_string()) {
                Err(SpecError::InferenceParse(msg)) => {
                    assert!(results.iter().any(|key| msg.contains(&format!("unknown field `{key}`"))), "{msg}");
                }
                other => panic!("expected a parse error, got {other:?}"),
            }
        }
    }
}

// ---------------------------------------------- prefill is the training forward

/// A training spec whose forward block is the inference spec's prefill
/// (with `model.seq_len` the prompt's tokens).
pub(crate) fn training_twin(spec: &InferenceSpec) -> TrainingSpec {
    TrainingSpec {
        name: None,
        model: spec.model.clone(),
        workload: TrainingWorkloadSpec {
            global_batch: spec.workload.batch,
            microbatch: spec.workload.batch,
            datatype: spec.workload.datatype,
            optimizer: None,
        },
        mapping: TrainingMappingSpec {
            tp: spec.mapping.tp,
            pp: 1,
            dp: 1,
            pipeline_interleaving: 1,
            recompute: Recompute::None,
            tp_comm: TpComm::Ar,
            seq_par_ag_redo: false,
            fused_activation: false,
            optimizer_sharding: false,
            tp_overlap: crate::analysis::workload::TpOverlap::None,
            pipeline_schedule: None,
        },
    }
}

#[test]
fn ungated_prefill_is_the_training_forward_invocation_by_invocation() {
    for (tp, batch, prompt) in [(1, 1, 512), (4, 8, 512), (8, 2, 300), (2, 3, 2048)] {
        let spec = with(|s| {
            s.model.ffn_hidden = 16384;
            s.model.gated_mlp = false;
            s.mapping.tp = tp;
            s.workload.batch = batch;
            s.workload.prompt_tokens = prompt;
            s.workload.generated_tokens = 0;
            s.model.seq_len = prompt;
        });
        let pass = prefill(&spec);
        let train = derive_training_block(&training_twin(&spec)).expect("training twin");
        // Same records except the phase (and so the name suffix).
        let strip = |inv: &PrimitiveInvocation| {
            let mut inv = inv.clone();
            inv.phase = Phase::Forward;
            inv.name = format!("{}.fwd", inv.source);
            inv
        };
        let fwd: Vec<PrimitiveInvocation> = train.phase(Phase::Forward).cloned().collect();
        let inf: Vec<PrimitiveInvocation> = pass.derivation.invocations.iter().map(strip).collect();
        assert_eq!(inf, fwd, "tp {tp}, b {batch}, s {prompt}");
        assert_eq!(pass.derivation.memory.weights, train.memory.weights);
        assert_eq!(pass.derivation.memory.act_working_space, train.memory.act_working_space);
    }
}

// ------------------------------------------------------------ invocations

#[test]
fn invocations_are_well_formed() {
    for spec in [llama(), with(|s| s.model.gated_mlp = false), with(|s| s.mapping.tp = 1), with(|s| s.model.kv_heads = Some(2))] {
        for pass in [prefill(&spec), decode(&spec, 530)] {
            let mut names = HashSet::new();
            for inv in &pass.derivation.invocations {
                assert!(names.insert(inv.name.clone()), "duplicate {}", inv.name);
                assert_eq!(inv.phase, invocation_phase(pass.pass));
                assert_eq!(inv.name, format!("{}.{}", inv.source, inv.phase.suffix()));
                assert_eq!(inv.engine, inv.primitive.engine());
                assert_eq!(inv.collective.is_some(), inv.primitive == Primitive::Collective);
                assert!(inv.ops > 0 && inv.read_bytes > 0 && inv.write_bytes > 0, "{}", inv.name);
            }
            // Inference has no backward or optimizer state.
            let memory = pass.derivation.memory;
            assert_eq!((memory.act_storage_space, memory.weight_grads, memory.optimizer, memory.act_grads), (0, 0, 0, 0));
        }
    }
}

#[test]
fn gated_mlp_is_gate_up_down_plus_swiglu() {
    let spec = llama();
    let pass = prefill(&spec);
    let sources: Vec<&str> =
        pass.derivation.invocations.iter().filter(|i| i.source.starts_with("mlp.")).map(|i| i.source.as_str()).collect();
    assert_eq!(sources, ["mlp.ln", "mlp.gate", "mlp.up", "mlp.swiglu", "mlp.down", "mlp.tp_exit", "mlp.dropout", "mlp.residual"]);
    let (m, h, f) = (8 * 512u64, 4096u64, 11008u64 / 4);
    for source in ["mlp.gate", "mlp.up", "mlp.down"] {
        let inv = one(&pass, source);
        assert_eq!(inv.primitive, Primitive::Matmul);
        assert_eq!(inv.ops, 2 * m * h * f);
    }
    let gating = one(&pass, "mlp.swiglu");
    assert_eq!(gating.primitive, GATED_ACTIVATION);
    assert_eq!(gating.engine, Engine::Vector);
    assert_eq!(gating.ops, 6 * m * f);
    assert_eq!((gating.read_bytes, gating.write_bytes), (2 * 2 * m * f, 2 * m * f));
    // Ungated: two matmuls and GeLU.
    let plain = prefill(&with(|s| s.model.gated_mlp = false));
    assert!(plain.derivation.from_source("mlp.gate").next().is_none());
    assert_eq!(one(&plain, "mlp.gelu").ops, 8 * m * f);
}

#[test]
fn tp_all_reduces_two_per_block_whole_tensor() {
    let spec = llama();
    for (pass, tokens) in [(prefill(&spec), 8 * 512u64), (decode(&spec, 570), 8)] {
        let collectives: Vec<&PrimitiveInvocation> =
            pass.derivation.invocations.iter().filter(|i| i.primitive == Primitive::Collective).collect();
        let sources: Vec<&str> = collectives.iter().map(|i| i.source.as_str()).collect();
        assert_eq!(sources, ["attn.tp_exit", "mlp.tp_exit"]);
        for inv in collectives {
            let bytes = tokens * 4096 * 2;
            assert_eq!(inv.collective, Some(CollectiveFacts { kind: CollectiveKind::AllReduce, message_bytes: bytes }));
            assert_eq!(inv.ops, tokens * 4096 / 4 * 3);
        }
        assert_eq!(facts(&pass).collectives, 2);
    }
    let single = with(|s| s.mapping.tp = 1);
    for pass in [prefill(&single), decode(&single, 570)] {
        let f = facts(&pass);
        assert_eq!((f.collectives, f.baseblock_fw_tp_size), (0, 0));
    }
}

// ------------------------------------------------------------ KV cache / GQA

#[test]
fn gqa_and_mqa_shard_or_replicate_kv_heads() {
    // (kv_heads, tp) -> KV heads per rank.
    for (kv_heads, tp, local) in [
        (32, 4, 8),
        (8, 4, 2),
        (8, 8, 1),
        (4, 8, 1),  // fewer KV heads than ranks: replicated
        (2, 16, 1), // each KV head on 8 ranks
        (1, 4, 1),  // MQA
        (1, 1, 1),
    ] {
        let spec = with(|s| {
            s.model.kv_heads = Some(kv_heads);
            s.mapping.tp = tp;
        });
        spec.validate().unwrap_or_else(|e| panic!("kv {kv_heads} tp {tp}: {e}"));
        assert_eq!(spec.kv_heads_per_rank(), local, "kv {kv_heads} tp {tp}");
        let (b, s, h, d, e) = (8u64, 512u64, 4096u64, 128u64, 2u64);
        let pass = prefill(&spec);
        for source in ["attn.k", "attn.v"] {
            let inv = one(&pass, source);
            assert_eq!(inv.ops, 2 * b * s * h * local * d, "{source}");
            assert_eq!(inv.write_bytes, b * s * local * d * e, "{source}");
        }
        // The query side is untouched by grouping.
        assert_eq!(one(&pass, "attn.q").ops, 2 * b * s * h * (h / tp));
        assert_eq!(one(&pass, "attn.scores").ops, 2 * b * (32 / tp) * s * d * s);
        let capacity = 2 * b * s * d * local * e;
        assert_eq!(kv_cache_bytes(&spec, s), capacity);
        let f = facts(&pass);
        assert_eq!(f.per_gpu_layer_kv_bytes_read, capacity);
        assert_eq!(f.kv_bytes_written, capacity);
        let step = facts(&decode(&spec, 576));
        assert_eq!(step.per_gpu_layer_kv_bytes_read, 2 * b * 576 * d * local * e);
        assert_eq!(step.kv_bytes_written, 2 * b * d * local * e);
        let all = InferenceFacts::from_spec(&spec).expect("facts");
        assert_eq!(all.kv_cache_bytes_after_prefill, capacity);
        assert_eq!(all.kv_cache_bytes_end_of_generation, 2 * b * 576 * d * local * e);
    }
}

#[test]
fn kv_reads_and_writes_are_inside_the_invocation_bytes() {
    let spec = with(|s| {
        s.model.kv_heads = Some(8);
        s.workload.kv_datatype = Some(Datatype::Float8);
    });
    let (b, h, d, local, heads) = (8u64, 4096u64, 128u64, 2u64, 8u64);
    for (pass, new, ctx) in [(prefill(&spec), 512u64, 512u64), (decode(&spec, 570), 1, 570)] {
        let f = facts(&pass);
        // K/V projections write their outputs, in fp8, into the cache.
        let k = one(&pass, "attn.k");
        assert_eq!(k.write_bytes, b * new * local * d);
        assert_eq!(k.read_bytes, (b * new * h + h * local * d) * 2);
        assert_eq!(f.kv_bytes_written, 2 * k.write_bytes);
        // Scores read Q (fp16) and the K cache (fp8); context reads P and V.
        let scores = one(&pass, "attn.scores");
        let k_cache = b * local * ctx * d;
        assert_eq!(scores.read_bytes, b * heads * new * d * 2 + k_cache);
        let context = one(&pass, "attn.context");
        assert_eq!(context.read_bytes, b * heads * new * ctx * 2 + k_cache);
        assert_eq!(f.per_gpu_layer_kv_bytes_read, 2 * k_cache);
        assert_eq!(kv_cache_bytes(&spec, ctx), 2 * k_cache);
    }
}

#[test]
fn kv_datatype_defaults_to_datatype() {
    let spec = llama();
    assert_eq!(spec.workload.kv_datatype, None);
    assert_eq!(spec.workload.kv_datatype(), Datatype::Float16);
    let fp8 = with(|s| s.workload.kv_datatype = Some(Datatype::Float8));
    assert_eq!(kv_cache_bytes(&fp8, 512) * 2, kv_cache_bytes(&spec, 512));
    // Only KV traffic changes, not the work.
    let (a, b) = (facts(&prefill(&spec)), facts(&prefill(&fp8)));
    assert_eq!(a.block_fw_flops, b.block_fw_flops);
    assert_eq!(a.per_gpu_layer_kv_bytes_read, 2 * b.per_gpu_layer_kv_bytes_read);
}

// ------------------------------------------------------------------ decode

#[test]
fn decode_work_grows_linearly_with_context() {
    for spec in [llama(), with(|s| s.model.kv_heads = Some(4)), with(|s| s.mapping.tp = 1)] {
        let (b, heads, local, d) = (8u64, 32 / spec.mapping.tp, spec.kv_heads_per_rank(), 128u64);
        let at = |ctx| facts(&decode(&spec, ctx));
        let base = at(513);
        let next = at(514);
        // Constant per-token increments: attention FLOPs 2·2·b·(a/t)·d, KV
        // read 2·b·kv_local·d elements; projections and weights do not move.
        assert_eq!(next.per_gpu_layer_flops_attn_bmm - base.per_gpu_layer_flops_attn_bmm, 4 * b * heads * d);
        assert_eq!(next.per_gpu_layer_kv_bytes_read - base.per_gpu_layer_kv_bytes_read, 2 * b * local * d * 2);
        assert_eq!(next.per_gpu_layer_flops_gemm, base.per_gpu_layer_flops_gemm);
        assert_eq!(next.per_gpu_layer_weight_bytes, base.per_gpu_layer_weight_bytes);
        assert_eq!(next.baseblock_fw_tp_size, base.baseblock_fw_tp_size);
        assert_eq!(next.kv_bytes_written, base.kv_bytes_written);
        let slope_flops = next.block_fw_flops - base.block_fw_flops;
        let slope_bytes = next.block_fw_mem_accessed - base.block_fw_mem_accessed;
        for ctx in [515, 530, 576, 1000, 4096] {
            let spec = with(|s| {
                *s = spec.clone();
                s.model.seq_len = 4096;
            });
            let f = facts(&decode(&spec, ctx));
            let steps = ctx - 513;
            assert_eq!(f.block_fw_flops, base.block_fw_flops + steps * slope_flops, "ctx {ctx}");
            assert_eq!(f.block_fw_mem_accessed, base.block_fw_mem_accessed + steps * slope_bytes);
            assert_eq!(f.per_gpu_layer_flops_attn_bmm, 4 * b * heads * d * ctx);
            assert_eq!(f.per_gpu_layer_kv_bytes_read, 2 * b * local * d * 2 * ctx);
        }
    }
}

#[test]
fn decode_run_totals_sum_every_step() {
    for spec in [
        llama(),
        with(|s| {
            s.model.kv_heads = Some(8);
            s.workload.generated_tokens = 7;
            s.workload.prompt_tokens = 100;
            s.model.seq_len = 107;
        }),
        with(|s| {
            s.workload.generated_tokens = 1;
            s.model.seq_len = 513;
        }),
    ] {
        let (prompt, generated) = (spec.workload.prompt_tokens, spec.workload.generated_tokens);
        let mut want = DecodeRunTotals { steps: generated, ..DecodeRunTotals::default() };
        for ctx in prompt + 1..=prompt + generated {
            let f = facts(&decode(&spec, ctx));
            want.flops += f.block_fw_flops;
            want.flops_gemm += f.per_gpu_layer_flops_gemm;
            want.flops_attn_bmm += f.per_gpu_layer_flops_attn_bmm;
            want.mem_accessed += f.block_fw_mem_accessed;
            want.tp_message_bytes += f.baseblock_fw_tp_size;
            want.collectives += f.collectives;
            want.weight_bytes_read += f.per_gpu_layer_weight_bytes;
            want.kv_bytes_read += f.per_gpu_layer_kv_bytes_read;
            want.kv_bytes_written += f.kv_bytes_written;
        }
        let all = InferenceFacts::from_spec(&spec).expect("facts");
        assert_eq!(all.decode_run, want);
        // Prefill writes the prompt's K/V, each step appends one token's.
        assert_eq!(all.prefill.kv_bytes_written + all.decode_run.kv_bytes_written, all.kv_cache_bytes_end_of_generation);
        assert_eq!(all.prefill.kv_bytes_written, all.kv_cache_bytes_after_prefill);
        assert_eq!(all.blocks_per_rank, spec.model.blocks / spec.mapping.pp);
    }
    let none = with(|s| {
        s.workload.generated_tokens = 0;
        s.model.seq_len = 512;
    });
    let all = InferenceFacts::from_spec(&none).expect("facts");
    assert_eq!(all.decode_run, DecodeRunTotals::default());
    assert_eq!(all.decode_at_final_context, None);
    assert_eq!(all.kv_cache_bytes_after_prefill, all.kv_cache_bytes_end_of_generation);
}

#[test]
fn decode_context_must_follow_the_prompt_and_fit_the_model() {
    let spec = llama();
    for context in [0, 1, 512, 577] {
        assert_eq!(derive_decode_block(&spec, context), Err(SpecError::DecodeContextOutOfRange { context, min: 513, max: 576 }));
    }
    assert!(derive_decode_block(&spec, 513).is_ok());
    assert!(derive_decode_block(&spec, 576).is_ok());
    let err = derive_decode_block(&spec, 9).expect_err("out of range");
    assert!(err.to_string().contains("context_tokens = 9"), "{err}");
    // An explicit position limit allows decode steps past the planned run.
    let long = with(|s| s.model.seq_len = 4096);
    assert!(derive_decode_block(&long, 4096).is_ok());
}

// -------------------------------------------------------------- spec / JSON

#[test]
fn json_defaults_and_round_trip() {
    let spec = llama();
    assert_eq!(spec.model.seq_len, 576, "seq_len defaults to the final context");
    assert_eq!(spec.mapping.pp, 1);
    assert_eq!(spec.workload.phase, None);
    let tweaked = with(|s| {
        s.workload.kv_datatype = Some(Datatype::Float8);
        s.workload.phase = Some(InferencePhase::Decode);
        s.mapping.pp = 4;
        s.model.seq_len = 4096;
        s.name = Some("x".into());
    });
    let text = serde_json::to_string_pretty(&tweaked).expect("serialize");
    assert!(text.contains("\"float8\"") && text.contains("\"decode\"") && text.contains("4096"));
    assert_eq!(InferenceSpec::from_json(&text), Ok(tweaked));
    let text = serde_json::to_string(&spec).expect("serialize");
    assert!(!text.contains("kv_datatype") && !text.contains("phase"));
    assert_eq!(InferenceSpec::from_json(&text), Ok(spec));
}

fn parse_error(doc: &Value) -> String {
    match InferenceSpec::from_json(&doc.to_string()) {
        Err(SpecError::InferenceParse(msg)) => msg,
        other => panic!("expected parse error, got {other:?}"),
    }
}

fn llama_json() -> Value {
    let mut doc = serde_json::to_value(llama()).expect("serialize");
    doc["model"].as_object_mut().expect("model").remove("seq_len");
    doc
}

#[test]
fn parse_rejects_unknown_missing_and_mistyped_fields() {
    let mut doc = llama_json();
    doc["mapping"]["dp"] = 2.into();
    assert!(parse_error(&doc).contains("unknown field `dp`"));

    let mut doc = llama_json();
    doc["model"]["n_layers"] = 2.into();
    let msg = parse_error(&doc);
    assert!(msg.contains("model") && msg.contains("unknown field `n_layers`"), "{msg}");

    let mut doc = llama_json();
    doc["model"].as_object_mut().expect("model").remove("heads");
    assert!(parse_error(&doc).contains("missing field `heads`"));

    let mut doc = llama_json();
    doc["workload"].as_object_mut().expect("workload").remove("prompt_tokens");
    assert!(parse_error(&doc).contains("missing field `prompt_tokens`"));

    let mut doc = llama_json();
    doc["workload"]["phase"] = "train".into();
    assert!(parse_error(&doc).contains("unknown variant `train`"));

    let mut doc = llama_json();
    doc["workload"]["kv_datatype"] = "int4".into();
    assert!(parse_error(&doc).contains("int4"));

    let mut doc = llama_json();
    doc["workload"]["global_batch"] = 8.into();
    assert!(parse_error(&doc).contains("unknown field `global_batch`"));

    let mut doc = llama_json();
    doc["workload"]["batch"] = (-1).into();
    assert!(parse_error(&doc).contains("-1"));
}

// ----------------------------------------------------------- validation rules

#[test]
fn rule_non_positive() {
    type Edit = fn(&mut InferenceSpec);
    let cases: [(&str, Edit); 12] = [
        ("model.hidden", |s| s.model.hidden = 0),
        ("model.ffn_hidden", |s| s.model.ffn_hidden = 0),
        ("model.seq_len", |s| s.model.seq_len = 0),
        ("model.heads", |s| s.model.heads = 0),
        ("model.head_dim", |s| s.model.head_dim = 0),
        ("model.blocks", |s| s.model.blocks = 0),
        ("model.vocab", |s| s.model.vocab = Some(0)),
        ("model.kv_heads", |s| s.model.kv_heads = Some(0)),
        ("workload.batch", |s| s.workload.batch = 0),
        ("workload.prompt_tokens", |s| s.workload.prompt_tokens = 0),
        ("mapping.tp", |s| s.mapping.tp = 0),
        ("mapping.pp", |s| s.mapping.pp = 0),
    ];
    for (field, edit) in cases {
        let err = error_of(edit);
        assert_eq!(err, SpecError::NonPositive { field });
        assert_eq!(err.to_string(), format!("{field} must be positive, got 0"));
    }
    // Zero generated tokens is a prefill-only request, not an error.
    assert!(with(|s| s.workload.generated_tokens = 0).validate().is_ok());
}

#[test]
fn attention_width_may_differ_from_hidden() {
    assert!(with(|s| s.model.head_dim = 127).validate().is_ok());
}

#[test]
fn rule_kv_heads_divide_heads() {
    let err = error_of(|s| s.model.kv_heads = Some(5));
    assert_eq!(err, SpecError::KvHeadsNotDivisor { kv_heads: 5, heads: 32 });
    assert!(err.to_string().contains("model.kv_heads must divide model.heads"));
}

#[test]
fn rule_tp_divides_heads() {
    let err = error_of(|s| s.mapping.tp = 3);
    assert_eq!(err, SpecError::TpNotDivisor { field: "model.hidden", value: 4096, tp: 3 });
    let err = error_of(|s| s.mapping.tp = 64);
    assert_eq!(err, SpecError::TpNotDivisor { field: "model.heads", value: 32, tp: 64 });
    assert_eq!(err.to_string(), "mapping.tp = 64 must divide model.heads = 32");
}

#[test]
fn rule_tp_and_kv_heads_divide_one_another() {
    // 48 query heads, 16 KV heads, TP 6: 6 ∤ 16 and 16 ∤ 6.
    let err = error_of(|s| {
        s.model.heads = 48;
        s.model.head_dim = 128;
        s.model.hidden = 6144;
        s.model.ffn_hidden = 6 * 2752;
        s.model.kv_heads = Some(16);
        s.mapping.tp = 6;
    });
    assert_eq!(err, SpecError::KvHeadsTpMismatch { kv_heads: 16, tp: 6 });
    let msg = err.to_string();
    assert!(msg.contains("mapping.tp = 6") && msg.contains("model.kv_heads = 16"), "{msg}");
    // Either direction of divisibility is fine.
    for (kv, tp, local) in [(16, 8, 2), (16, 16, 1), (4, 16, 1), (3, 48, 1)] {
        let spec = with(|s| {
            s.model.heads = 48;
            s.model.head_dim = 128;
            s.model.hidden = 6144;
            s.model.ffn_hidden = 48 * 256;
            s.model.kv_heads = Some(kv);
            s.mapping.tp = tp;
        });
        assert_eq!(spec.validate(), Ok(()), "kv {kv} tp {tp}");
        assert_eq!(spec.kv_heads_per_rank(), local, "kv {kv} tp {tp}");
    }
    assert!(with(|s| {
        s.model.kv_heads = Some(4);
        s.mapping.tp = 8;
    })
    .validate()
    .is_ok());
}

#[test]
fn rule_tp_divides_ffn_hidden() {
    let err = error_of(|s| s.model.ffn_hidden = 11010);
    assert_eq!(err, SpecError::TpNotDivisor { field: "model.ffn_hidden", value: 11010, tp: 4 });
}

#[test]
fn uneven_pipeline_is_accepted() {
    // Even: 32 blocks on pp 8, 4 per stage.
    let spec = with(|s| s.mapping.pp = 8);
    assert_eq!((spec.blocks_per_rank(), spec.world_size()), (4, 32));
    assert_eq!((0..8).map(|s| spec.stage_blocks(s)).collect::<Vec<_>>(), vec![4; 8]);
    // Uneven: 32 = 5·6 + 2, so the first 2 stages hold 7 blocks and the
    // other 3 hold 6 (7 + 7 + 6 + 6 + 6 = 32); the fullest rank holds 7.
    let spec = with(|s| s.mapping.pp = 5);
    assert_eq!(spec.validate(), Ok(()));
    assert_eq!((spec.blocks_per_rank(), spec.world_size()), (7, 20));
    assert_eq!((0..5).map(|s| spec.stage_blocks(s)).collect::<Vec<_>>(), vec![7, 7, 6, 6, 6]);
    // One block per stage, and a single stage holding all of them.
    assert_eq!((with(|s| s.mapping.pp = 32).blocks_per_rank(), with(|s| s.mapping.pp = 1).blocks_per_rank()), (1, 32));
    // The facts stay per block per TP rank (the pipeline does not change
    // a block); their rank count is the fullest rank's.
    let facts = InferenceFacts::from_spec(&spec).expect("facts");
    let even = InferenceFacts::from_spec(&llama()).expect("facts");
    assert_eq!(facts.blocks_per_rank, 7);
    assert_eq!(InferenceFacts { blocks_per_rank: 32, ..facts }, even);
    // KV cache of one block on one TP rank at the end of generation:
    // 2·b·tokens·d·(kv_heads/tp) = 2·8·576·128·8 elements of 2 bytes,
    // 18 874 368 bytes; the fullest rank holds 7 blocks of it.
    assert_eq!(facts.kv_cache_bytes_end_of_generation, 18_874_368);
    assert_eq!(facts.kv_cache_bytes_end_of_generation * facts.blocks_per_rank, 132_120_576);
}

#[test]
fn rule_pp_at_most_blocks() {
    let err = error_of(|s| s.mapping.pp = 33);
    assert_eq!(err, SpecError::MoreStagesThanBlocks { blocks: 32, pp: 33 });
    assert_eq!(err.to_string(), "mapping.pp = 33 exceeds model.blocks = 32: every pipeline stage holds at least one block");
    let err = InferenceSpec::from_json(&serde_json::to_string(&with(|s| s.mapping.pp = 33)).expect("serialize")).expect_err("pp > blocks");
    assert_eq!(err, SpecError::MoreStagesThanBlocks { blocks: 32, pp: 33 });
}

#[test]
fn rule_context_fits_seq_len() {
    let err = error_of(|s| s.model.seq_len = 575);
    assert_eq!(err, SpecError::ContextExceedsSeqLen { context: 576, seq_len: 575 });
    assert!(err.to_string().contains("model.seq_len"));
    let err = error_of(|s| {
        s.workload.prompt_tokens = u64::MAX;
        s.model.seq_len = u64::MAX;
    });
    assert!(matches!(err, SpecError::IntegerOutOfRange { field: "workload.prompt_tokens", .. }), "{err:?}");
}

#[test]
fn rule_phase_matches_generated_tokens() {
    let err = error_of(|s| s.workload.phase = Some(InferencePhase::Prefill));
    assert_eq!(err, SpecError::PrefillWithGeneratedTokens { generated_tokens: 64 });
    assert!(err.to_string().contains("workload.phase = prefill"));
    let err = error_of(|s| {
        s.workload.phase = Some(InferencePhase::Decode);
        s.workload.generated_tokens = 0;
    });
    assert_eq!(err, SpecError::DecodeWithoutGeneratedTokens);
    assert!(err.to_string().contains("workload.generated_tokens"));
}

#[test]
fn rule_work_scale_fits() {
    let err = error_of(|s| {
        s.workload.batch = 1 << 20;
    });
    assert!(matches!(err, SpecError::TooLarge { .. }), "{err:?}");
    assert!(err.to_string().contains("workload.batch"));
}

#[test]
fn largest_valid_spec_does_not_overflow() {
    // b·seq·h·max(h, f, seq) just under 2^54 with an fp32 model and a long
    // generation: debug builds would panic on any overflow.
    let spec = with(|s| {
        s.model.hidden = 8192;
        s.model.heads = 64;
        s.model.head_dim = 128;
        s.model.ffn_hidden = 8192 * 4;
        s.model.kv_heads = Some(64);
        s.mapping.tp = 1;
        s.workload.batch = 1;
        s.workload.datatype = Datatype::Float32;
        s.workload.prompt_tokens = 16384;
        s.workload.generated_tokens = 16384;
        s.model.seq_len = 32768;
    });
    spec.validate().expect("within the bound");
    let all = InferenceFacts::from_spec(&spec).expect("facts");
    assert!(all.decode_run.mem_accessed < u64::MAX / 16);
}

#[test]
fn derive_rejects_invalid_spec() {
    let spec = with(|s| s.mapping.tp = 0);
    let err = SpecError::NonPositive { field: "mapping.tp" };
    assert_eq!(derive_prefill_block(&spec), Err(err.clone()));
    assert_eq!(derive_decode_block(&spec, 600), Err(err.clone()));
    assert_eq!(InferenceFacts::from_spec(&spec), Err(err));
}

#[test]
fn passes_carry_their_own_phase() {
    assert_eq!(invocation_phase(InferencePhase::Prefill), Phase::Prefill);
    assert_eq!(invocation_phase(InferencePhase::Decode), Phase::Decode);
    assert_eq!(Phase::Prefill.suffix(), "prefill");
    assert_eq!(Phase::Decode.suffix(), "decode");
    assert_eq!(Primitive::Swiglu.engine(), Engine::Vector);
    for (i, phase) in Phase::ALL.iter().enumerate() {
        assert_eq!(phase.index(), i);
    }
    let spec = llama();
    for pass in [prefill(&spec), decode(&spec, 576)] {
        let expected = if pass.new_tokens == 1 { InferencePhase::Decode } else { InferencePhase::Prefill };
        assert_eq!(pass.pass, expected);
        // The training facts machinery sums the pass under its own phase.
        let own = invocation_phase(pass.pass);
        let totals: WorkTotals = pass.derivation.invocations.iter().map(WorkItem::from).collect();
        let f = facts(&pass);
        assert_eq!(totals.phase(own).ops, f.block_fw_flops);
        assert_eq!(totals.phase(own).bytes, f.block_fw_mem_accessed);
        for phase in Phase::ALL.into_iter().filter(|p| *p != own) {
            assert_eq!(totals.phase(phase), PhaseSum::default(), "{phase:?}");
        }
    }
}

#[test]
fn inference_facts_serialize_with_oracle_names() {
    let all = InferenceFacts::from_spec(&llama()).expect("facts");
    let value = serde_json::to_value(all).expect("serialize");
    for (name, got) in all.prefill.calculon_fields().iter().chain(&all.prefill.genz_fields()) {
        assert_eq!(value["prefill"][name].as_u64(), Some(*got), "{name}");
    }
    let back: InferenceFacts = serde_json::from_value(value).expect("deserialize");
    assert_eq!(back, all);
}
