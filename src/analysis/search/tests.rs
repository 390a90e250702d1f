//! The search against Calculon's `llm-optimal-execution` (expected values
//! from `test/oracles/calculon/search-*.json`, produced by Calculon).

use super::*;
use crate::analysis::estimate::{estimate_spec, EstimateOptions};
use crate::analysis::workload::Datatype;
use std::collections::BTreeMap;

const ORACLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/test/oracles/calculon");

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn system(name: &str) -> SystemProfile {
    SystemProfile::from_json(&read(&format!("{ORACLES}/systems/{name}.json"))).expect("system")
}

fn model(name: &str) -> ModelSpec {
    ModelSpec::from_any_json(&read(&format!("{ORACLES}/models/{name}.json")), Some(name)).expect("model")
}

fn options(procs: u64, max_batch: u64) -> SearchOptions {
    SearchOptions {
        procs,
        max_batch,
        datatype: Datatype::Float16,
        top: 10,
        dp_overlap: true,
        // The recorded Calculon searches ran with --no-tp-overlap.
        tp_overlap: false,
        fused_activation: vec![true],
        calculon_dp_overlap: false,
        samples: 0,
        threads: Some(1),
        headroom: None,
        offload: true,
    }
}

/// Calculon's execution JSON of a configuration, for comparison.
fn calculon_execution(c: &Config) -> serde_json::Value {
    let k = &c.key;
    serde_json::json!({
        "tensor_par": k.tp, "pipeline_par": k.pp, "data_par": k.dp,
        "tensor_par_net": c.networks.tp, "pipeline_par_net": c.networks.pp, "data_par_net": c.networks.dp,
        "batch_size": k.global_batch, "microbatch_size": k.microbatch,
        "fused_activation": k.fused_activation, "activation_recompute": serde_json::to_value(k.recompute).expect("enum"),
        "pipeline_interleaving": c.pipeline_interleaving, "optimizer_sharding": k.optimizer_sharding,
        "tensor_par_comm_type": k.tp_comm.name(), "seq_par_ag_redo": k.seq_par_ag_redo,
        "data_par_overlap": c.data_par_overlap, "weight_offload": c.offload.weights,
        "activations_offload": c.offload.activations, "optimizer_offload": c.offload.optimizer,
    })
}

fn matches_execution(ours: &serde_json::Value, theirs: &serde_json::Value) -> bool {
    ours.as_object().expect("object").iter().all(|(k, v)| &theirs[k] == v)
}

#[test]
fn megatron_126m_on_8_agrees_with_calculon() {
    let oracle: serde_json::Value = serde_json::from_str(&read(&format!("{ORACLES}/search-megatron-126M-8.json"))).expect("oracle");
    let result = search(&model("megatron-126M"), &system("a100_nomem2"), &options(8, 8), Control::default()).expect("search");
    assert_eq!(result.configurations, oracle["configurations_evaluated"].as_u64().expect("count"));
    assert_eq!(result.outcome.evaluated, result.configurations);
    let best = &result.top()[0];
    let want = oracle["top"][0]["sample_rate"].as_f64().expect("rate");
    assert!((best.estimate.sample_rate - want).abs() <= 1e-9 * want, "best {} vs Calculon {want}", best.estimate.sample_rate);
    let tied: Vec<&serde_json::Value> = oracle["top"].as_array().expect("top").iter().map(|t| &t["execution"]).collect();
    let ours = calculon_execution(&best.config);
    assert!(tied.iter().any(|t| matches_execution(&ours, t)), "best {ours} is none of Calculon's tied best");
    // Every configuration Calculon reports tied is found with the same rate.
    for t in &oracle["top"].as_array().expect("top")[..] {
        let rate = t["sample_rate"].as_f64().expect("rate");
        let found = result.top().iter().any(|c| {
            matches_execution(&calculon_execution(&c.config), &t["execution"]) && (c.estimate.sample_rate - rate).abs() <= 1e-9 * rate
        });
        assert!(found, "Calculon's {} not in our top 10", t["execution"]);
    }
    // The per-processor memory of the best agrees as well.
    for (field, value) in best.estimate.memory.per_processor.fields() {
        let want = oracle["top"][0]["per_processor"][field].as_f64().expect("field");
        assert!((value - want).abs() <= 1e-9 * want.abs().max(1.0), "{field}: {value} vs {want}");
    }
}

#[test]
fn output_is_the_same_on_any_thread_count() {
    let m = model("megatron-126M");
    let s = system("a100_80g");
    let mut one = options(8, 16);
    one.samples = 7;
    one.fused_activation = vec![false, true];
    let mut two = one.clone();
    two.threads = Some(2);
    let a = search(&m, &s, &one, Control::default()).expect("one thread");
    let b = search(&m, &s, &two, Control::default()).expect("two threads");
    assert_eq!(a.top(), b.top());
    assert_eq!(a.outcome.samples, b.outcome.samples);
    assert_eq!(a.outcome.pruned, b.outcome.pruned);
    assert_eq!((a.outcome.fit, a.outcome.evaluated), (b.outcome.fit, b.outcome.evaluated));
}

#[test]
fn every_sample_is_the_estimate_of_its_spec() {
    // The search composes a block priced once per key; the estimate of the
    // configuration's spec from scratch must give the very same numbers.
    let m = model("megatron-126M");
    let s = system("h100_80g_nvl8");
    let mut o = options(16, 32);
    o.samples = 200;
    o.top = 3;
    let result = search(&m, &s, &o, Control::default()).expect("search");
    let (mut compared, mut offloaded) = (0, 0);
    for sample in &result.outcome.samples {
        let Ok(got) = &sample.outcome else { continue };
        let spec = sample.config.spec(&m, o.datatype);
        let options = EstimateOptions {
            data_par_overlap: sample.config.data_par_overlap,
            offload: sample.config.offload,
            ..EstimateOptions::default()
        };
        let want = estimate_spec(&spec, &s, &sample.config.networks, &options).expect("estimates");
        assert_eq!(got, &want, "{:?}", sample.config);
        compared += 1;
        offloaded += usize::from(sample.config.offload.any());
    }
    assert!(compared > 50, "only {compared} samples had estimates");
    // The system has a second memory tier: offload is in the space.
    assert!(s.mem2().capacity_bytes() > 0.0 && offloaded > 10, "{offloaded} offloaded samples");
}

#[test]
fn interruption_returns_what_was_found() {
    let flag = AtomicBool::new(true);
    let result =
        search(&model("megatron-126M"), &system("a100_nomem2"), &options(8, 8), Control { interrupt: Some(&flag), ..Control::default() })
            .expect("search");
    assert!(result.outcome.partial);
    assert_eq!(result.outcome.evaluated, 0);
    assert!(result.top().is_empty());
}

#[test]
fn calculon_model_files_read_as_they_are() {
    let m = model("gpt3-175B");
    assert_eq!((m.hidden, m.ffn_hidden, m.seq_len, m.heads, m.head_dim, m.blocks), (12288, 49152, 2048, 96, 128, 96));
    assert_eq!(m.name.as_deref(), Some("gpt3-175B"));
    let err = ModelSpec::from_any_json(
        r#"{"hidden": 1, "feedforward": 1, "seq_size": 1, "attn_heads": 1, "attn_size": 1, "num_blocks": 1, "x": 2}"#,
        None,
    )
    .expect_err("unknown field");
    assert!(err.to_string().contains("unknown field `x`"), "{err}");
    let err = ModelSpec::from_any_json(
        r#"{"hidden": 0, "feedforward": 1, "seq_size": 1, "attn_heads": 1, "attn_size": 1, "num_blocks": 1}"#,
        None,
    )
    .expect_err("zero");
    assert!(err.to_string().contains("model.hidden"), "{err}");
}

/// Offload explored as Calculon does on a system with a second memory tier
/// (test/Inputs/calculon/search-megatron-126M-4-a100_80g.json, Calculon's
/// own search): its count and its whole top five, at its rates.
#[test]
fn offload_space_agrees_with_calculon() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/test/Inputs/calculon/search-megatron-126M-4-a100_80g.json");
    let oracle: serde_json::Value = serde_json::from_str(&read(path)).expect("oracle");
    let (m, s) = (model("megatron-126M"), system("a100_80g"));
    let result = search(&m, &s, &options(4, 4), Control::default()).expect("search");
    assert_eq!(result.configurations, oracle["configurations_evaluated"].as_u64().expect("count"));
    assert_eq!(result.configurations, result.calculon_configurations);
    for (i, t) in oracle["top"].as_array().expect("top").iter().enumerate() {
        let rate = t["sample_rate"].as_f64().expect("rate");
        let ours = &result.top()[i];
        assert!((ours.estimate.sample_rate - rate).abs() <= 1e-9 * rate, "rank {i}: {} vs Calculon {rate}", ours.estimate.sample_rate);
        assert!(
            result.top().iter().any(|c| matches_execution(&calculon_execution(&c.config), &t["execution"])
                && (c.estimate.sample_rate - rate).abs() <= 1e-9 * rate),
            "Calculon's {} at {rate} not found",
            t["execution"]
        );
    }
    // Without offload the space is Calculon's without its offload choices.
    let plain = search(&m, &s, &SearchOptions { offload: false, ..options(4, 4) }, Control::default()).expect("search");
    assert!(plain.configurations * 4 < result.configurations);
    assert!(plain.top().iter().all(|c| !c.config.offload.any()));
    assert!(result.outcome.fit > plain.outcome.fit);
    // Calculon's rule: offload needs 3 blocks per processor (12 blocks on
    // 12 processors: PP 6 and 12 leave fewer).
    let wide = search(&m, &s, &options(12, 12), Control::default()).expect("search");
    assert!(wide.outcome.pruned.contains_key("offload_blocks"));
}

/// The recorded case (test/Inputs/calculon/search-gpt3-13B-4.json, from
/// Calculon's own llm-optimal-execution by record-search-case.py): its best
/// configurations use attn_only recompute under DP overlap, where Calculon's
/// DP-overlap figure carries its recompute prefix-sum defect.
#[test]
fn gpt3_13b_on_4_agrees_with_calculon_in_compat_mode() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/test/Inputs/calculon/search-gpt3-13B-4.json");
    let oracle: serde_json::Value = serde_json::from_str(&read(path)).expect("oracle");
    let m = model("gpt3-13B");
    let s = system("a100_nomem2");
    let mut o = options(4, 4);
    o.calculon_dp_overlap = true;
    let compat = search(&m, &s, &o, Control::default()).expect("search");
    assert_eq!(compat.configurations, oracle["configurations_evaluated"].as_u64().expect("count"));
    let top = oracle["top"].as_array().expect("top");
    let want = top[0]["sample_rate"].as_f64().expect("rate");
    let best = &compat.top()[0];
    assert!((best.estimate.sample_rate - want).abs() <= 1e-9 * want, "best {} vs Calculon {want}", best.estimate.sample_rate);
    let tied: Vec<&serde_json::Value> = top.iter().filter(|t| t["sample_rate"].as_f64() == Some(want)).map(|t| &t["execution"]).collect();
    assert!(tied.iter().any(|t| matches_execution(&calculon_execution(&best.config), t)));
    // Calculon's whole top five, at its rates.
    for t in top {
        let rate = t["sample_rate"].as_f64().expect("rate");
        assert!(
            compat.top().iter().any(|c| matches_execution(&calculon_execution(&c.config), &t["execution"])
                && (c.estimate.sample_rate - rate).abs() <= 1e-9 * rate),
            "Calculon's {} at {rate} not found",
            t["execution"]
        );
    }
    // Ranked by Blueprint's (correct) figure, recomputing configurations
    // under DP overlap expose less DP time: the best is at least as fast.
    o.calculon_dp_overlap = false;
    let fixed = search(&m, &s, &o, Control::default()).expect("search");
    assert!(fixed.top()[0].estimate.sample_rate >= want);
    assert!(fixed.outcome.dp_overlap_differs > 0);
    assert_eq!(fixed.outcome.fit, compat.outcome.fit);
}

/// Calculon counts a configuration good when its network binding fits and
/// its stage-0 memory fits the first tier; Blueprint additionally prunes
/// interleaved schedules whose microbatch count PP does not divide. Counting
/// the space with Calculon's two rules alone must give Calculon's good count.
#[test]
fn calculons_good_count_is_fit_plus_the_schedule_rule() {
    use crate::analysis::schedule::ProcessorMemory;
    use crate::analysis::system::NetworkBinding;
    use crate::analysis::workload::{derive_training_block, BlockFacts};
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/test/Inputs/calculon/search-gpt3-13B-4.json");
    let oracle: serde_json::Value = serde_json::from_str(&read(path)).expect("oracle");
    let (m, s, o) = (model("gpt3-13B"), system("a100_nomem2"), options(4, 4));
    let space = Space {
        model: m.clone(),
        procs: o.procs,
        max_batch: o.max_batch,
        networks: s.networks().len(),
        dp_overlap: true,
        fused_activation: vec![true],
        tp_overlap: false,
        offload: false,
    };
    let mut good = 0u64;
    for k in space.keys() {
        let mut spec = Config {
            key: k.key,
            pipeline_interleaving: 1,
            networks: NetworkBinding { tp: 0, pp: 0, dp: 0 },
            data_par_overlap: false,
            offload: crate::analysis::estimate::Offload::default(),
        }
        .spec(&m, o.datatype);
        let block = BlockFacts::from_derivation(&derive_training_block(&spec).expect("derives"), &spec);
        for &tn in &k.tp_nets {
            for &v in k.interleavings.iter() {
                spec.mapping.pipeline_interleaving = v;
                let fits = ProcessorMemory::calculon(&block, &spec).proc_mem_tier1_cap_req <= s.mem1().capacity_bytes();
                for &pn in &k.pp_nets {
                    for &dn in &k.dp_nets {
                        let bound = NetworkBinding { tp: tn, pp: pn, dp: dn }.validate(&s, k.key.tp, k.key.pp, k.key.dp).is_ok();
                        if bound && fits {
                            good += k.overlaps.len() as u64;
                        }
                    }
                }
            }
        }
    }
    assert_eq!(good, oracle["good_configurations"].as_u64().expect("good"));
    let result = search(&m, &s, &o, Control::default()).expect("search");
    // Interleaving with microbatches not a multiple of PP is priced as
    // Calculon prices it: every configuration Calculon counts good fits.
    assert_eq!(result.outcome.fit, good);
}

#[test]
fn calculons_counts_with_offload_and_tp_overlap() {
    // Counted by Calculon itself (llm-optimal-execution -d, which loops
    // over the executions without running them): gpt3-175B on 64, batch 64,
    // a100_80g (a second memory tier: offload choices), 1,158,848 with
    // --no-tp-overlap and 3,232,128 without; megatron-126M on 8, batch 8,
    // h100_80g_nvl8, -f all --no-dp-overlap: 68,704 with --no-tp-overlap,
    // 170,848 without.
    let counts = |o: &SearchOptions, name: &str, system_name: &str| {
        let (without, with) = (o.clone(), SearchOptions { tp_overlap: true, ..o.clone() });
        let count =
            |o: &SearchOptions| search(&model(name), &system(system_name), o, Control::default()).expect("search").calculon_configurations;
        (count(&without), count(&with))
    };
    let mut o = options(64, 64);
    o.top = 1;
    assert_eq!(counts(&o, "gpt3-175B", "a100_80g"), (1_158_848, 3_232_128));
    let mut o = options(8, 8);
    o.fused_activation = vec![false, true];
    o.dp_overlap = false;
    assert_eq!(counts(&o, "megatron-126M", "h100_80g_nvl8"), (68_704, 170_848));
}

#[test]
fn headroom_prunes_above_the_limit_and_keeps_the_nearest_miss() {
    let (m, s) = (model("megatron-126M"), system("a100_nomem2"));
    let limit = s.mem1().capacity_bytes() - 75.0 * 1_073_741_824.0;
    let every = search(&m, &s, &SearchOptions { top: 1000, ..options(2, 2) }, Control::default()).expect("search");
    let run = |threads, headroom| {
        search(&m, &s, &SearchOptions { top: 1000, threads, headroom: Some(headroom), ..options(2, 2) }, Control::default())
            .expect("search")
    };
    let kept = run(Some(1), Headroom::Gib(75.0));
    assert_eq!(every.outcome.fit as usize, every.top().len(), "the space's fitting configurations are all listed");
    let (inside, outside): (Vec<&Candidate>, Vec<&Candidate>) =
        every.top().iter().partition(|c| c.estimate.memory.per_processor.proc_mem_tier1_cap_req <= limit);
    assert!(!inside.is_empty() && !outside.is_empty());
    let indices = |cs: &[&Candidate]| cs.iter().map(|c| c.index).collect::<Vec<_>>();
    assert_eq!(indices(&kept.top().iter().collect::<Vec<_>>()), indices(&inside));
    let pruned = &kept.outcome.pruned[MEMORY_HEADROOM];
    assert_eq!(pruned.count as usize, outside.len());
    let excess = |c: &Candidate| c.estimate.memory.per_processor.proc_mem_tier1_cap_req - limit;
    let least = outside.iter().map(|c| excess(c)).fold(f64::INFINITY, f64::min);
    let nearest = pruned.nearest.as_ref().expect("a nearest miss");
    assert_eq!(nearest.over_by_bytes, least);
    // The same whatever the threads and however the headroom is said.
    for other in [run(None, Headroom::Gib(75.0)), run(Some(2), Headroom::Fraction(0.9375))] {
        let theirs = other.outcome.pruned[MEMORY_HEADROOM].nearest.as_ref().expect("a nearest miss");
        assert_eq!(theirs.index, nearest.index);
        assert_eq!(indices(&other.top().iter().collect::<Vec<_>>()), indices(&inside));
    }
    let too_much = search(&m, &s, &SearchOptions { headroom: Some(Headroom::Gib(80.0)), ..options(2, 2) }, Control::default());
    assert!(matches!(too_much, Err(SearchError::HeadroomTooLarge { .. })));
    let nan = search(&m, &s, &SearchOptions { headroom: Some(Headroom::Gib(f64::NAN)), ..options(2, 2) }, Control::default());
    assert!(matches!(nan, Err(SearchError::BadHeadroom)));
}

/// The lines of a listing of `model` on `system`.
fn listed(model: &ModelSpec, system: &SystemProfile, options: &SearchOptions, format: listing::ListingFormat) -> (SearchResult, String) {
    let mut out = Vec::new();
    let result = search_with(model, system, options, Control::default(), Some(Listing { format, out: &mut out })).expect("search");
    (result, String::from_utf8(out).expect("UTF-8"))
}

#[test]
fn listing_has_every_configuration_once_in_order() {
    // Three tiers (bindings pruned), offload (the 3-blocks rule prunes),
    // TP overlap and interleaving (Blueprint's rule prunes).
    let mut system_json: serde_json::Value = serde_json::from_str(&read(&format!("{ORACLES}/systems/a100_80g.json"))).expect("json");
    let mut small = system_json["networks"][1].clone();
    small["size"] = serde_json::json!(2);
    system_json["networks"].as_array_mut().expect("networks").push(small);
    let system = SystemProfile::from_json(&system_json.to_string()).expect("system");
    let mut o = options(12, 12);
    o.tp_overlap = true;
    let (result, text) = listed(&model("megatron-126M"), &system, &o, listing::ListingFormat::Csv);
    let mut lines = text.lines();
    assert_eq!(lines.next().map(str::to_string), Some(listing::columns().collect::<Vec<_>>().join(",")));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len() as u64, result.configurations);
    // Several chunks, each written while the next is evaluated.
    assert!(result.configurations > 3 * LISTING_CHUNK, "{}", result.configurations);
    let (fits_at, pruned_at) = (20, 21);
    assert_eq!(listing::columns().nth(fits_at), Some("fits"));
    let mut pruned = BTreeMap::new();
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row.len(), listing::columns().count());
        assert_eq!(row[0], i.to_string());
        if !row[pruned_at].is_empty() {
            *pruned.entry(row[pruned_at].to_string()).or_insert(0u64) += 1;
        }
    }
    let want: BTreeMap<String, u64> = result.outcome.pruned.iter().map(|(k, p)| ((*k).to_string(), p.count)).collect();
    assert_eq!(pruned, want);
    assert!(want.contains_key("network_tier_not_filled") || want.contains_key("network_tier_too_small"), "{want:?}");
    assert!(want.contains_key(evaluate::OFFLOAD_BLOCKS), "{want:?}");
    assert_eq!(rows.iter().filter(|r| r[fits_at] == "true").count() as u64, result.outcome.fit);
    // The listing does not change the search.
    let plain = search(&model("megatron-126M"), &system, &o, Control::default()).expect("search");
    assert_eq!(plain.top(), result.top());
    assert_eq!(plain.outcome.fit, result.outcome.fit);
}

#[test]
fn listing_is_the_same_for_any_thread_count_and_format() {
    let (m, s) = (model("megatron-126M"), system("a100_nomem2"));
    let mut o = options(8, 8);
    let (_, one) = listed(&m, &s, &o, listing::ListingFormat::JsonLines);
    o.threads = Some(3);
    let (_, three) = listed(&m, &s, &o, listing::ListingFormat::JsonLines);
    assert_eq!(one, three);
    let (_, csv) = listed(&m, &s, &o, listing::ListingFormat::Csv);
    // The same text for each value (the JSON line is flat: no commas in values).
    let columns: Vec<&str> = listing::columns().collect();
    for (line, row) in one.lines().zip(csv.lines().skip(1)) {
        let inner = line.strip_prefix('{').and_then(|l| l.strip_suffix('}')).expect("an object a line");
        let pairs: Vec<(&str, &str)> = inner.split(',').map(|p| p.split_once(':').expect("key:value")).collect();
        assert_eq!(pairs.len(), columns.len());
        for (((key, value), name), cell) in pairs.iter().zip(&columns).zip(row.split(',')) {
            assert_eq!(*key, format!("\"{name}\""));
            let value = if *value == "null" { "" } else { value.trim_matches('"') };
            assert_eq!(value, cell, "{name}");
        }
    }
}

#[test]
fn listing_write_errors_stop_the_search() {
    struct Full;
    impl std::io::Write for Full {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::new(std::io::ErrorKind::StorageFull, "full"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let listing = Listing { format: listing::ListingFormat::Csv, out: &mut Full };
    let result = search_with(&model("megatron-126M"), &system("a100_nomem2"), &options(8, 8), Control::default(), Some(listing));
    assert!(matches!(result, Err(SearchError::Listing(e)) if e.kind() == std::io::ErrorKind::StorageFull));
}
