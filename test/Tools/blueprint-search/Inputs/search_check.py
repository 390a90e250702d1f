#!/usr/bin/env python3
"""Checks for the blueprint-search lit tests (expected values come from
Calculon's oracle files or from the MLIR pipeline, never from the search).

  search_check.py two-paths SEARCH.json SYSTEM.json
      every top and sampled configuration with an estimate, run through the
      MLIR pipeline (blueprint-translate --import-transformer-training,
      blueprint-opt distribute + plan, blueprint-translate --estimate with the
      entry's networks and options): timing_seconds, sample_rate and
      per_processor must be identical
  search_check.py oracle SEARCH.json ORACLE.json
      the best sample rate equals Calculon's to relative 1e-9, the best
      configuration is one of Calculon's tied best, the configuration
      count equals Calculon's configurations_evaluated, and how many of
      the top K equal Calculon's in order
  search_check.py exact SEARCH.json ORACLE.json
      the fitting count equals Calculon's good_configurations, and the top K
      equal Calculon's in order bit for bit: every sample rate and total
      time, and every configuration one of Calculon's with that rate; says
      which entries are interleaved with microbatches PP does not divide
  search_check.py strip SEARCH.json
      the report without what depends on the machine (wall time, rate,
      threads), for comparing runs
  search_check.py tier-count SEARCH.json TIERS
      the report's configuration count equals the count of Calculon's
      llm-optimal-execution space (its rules, enumerated here) on a system
      of TIERS network tiers
"""
import json
import subprocess
import sys

PIPELINE = "builtin.module(distribute-transformer-training, plan-transformer-training)"


def two_paths(search_path, system):
    report = json.load(open(search_path))
    entries = [("top", e) for e in report["top"]] + [("sample", e) for e in report.get("sample", [])]
    checked, bad, tiled = 0, 0, 0
    for where, e in entries:
        if "timing_seconds" not in e:
            continue
        tiled += e["mapping"].get("tp_overlap", "none") != "none"
        spec = json.dumps({"model": report["model"], "workload": e["workload"], "mapping": e["mapping"]})
        module = subprocess.run(["blueprint-translate", "--import-transformer-training", "-"], input=spec,
                                capture_output=True, text=True)
        planned = subprocess.run(["blueprint-opt", f"--pass-pipeline={PIPELINE}"], input=module.stdout,
                                 capture_output=True, text=True)
        args = e["estimate_args"].split()
        estimate = subprocess.run(["blueprint-translate", "--estimate", "--system", system, *args, "--allow-over-capacity"],
                                  input=planned.stdout, capture_output=True, text=True)
        if estimate.returncode != 0:
            print(f"{where} {e['index']}: pipeline failed: {(module.stderr + planned.stderr + estimate.stderr).strip()}")
            bad += 1
            continue
        got = json.loads(estimate.stdout)
        diffs = [f"timing_seconds.{k}: search {v}, pipeline {got['timing_seconds'][k]}"
                 for k, v in e["timing_seconds"].items() if got["timing_seconds"][k] != v]
        diffs += [f"per_processor.{k}: search {v}, pipeline {got['per_processor'][k]}"
                  for k, v in e["per_processor"].items() if got["per_processor"][k] != v]
        if got["sample_rate"] != e["sample_rate"]:
            diffs.append(f"sample_rate: search {e['sample_rate']}, pipeline {got['sample_rate']}")
        if diffs:
            print(f"{where} {e['index']}: " + "; ".join(diffs))
            bad += 1
        checked += 1
    print(f"{checked - bad} of {checked} configurations identical through the MLIR pipeline")
    print(f"{tiled} of them with TP overlap (ring or pipe)")


def execution(e):
    m, w, n = e["mapping"], e["workload"], e["networks"]
    return {
        "tensor_par": m["tp"], "pipeline_par": m["pp"], "data_par": m["dp"],
        "tensor_par_net": n["tp"], "pipeline_par_net": n["pp"], "data_par_net": n["dp"],
        "batch_size": w["global_batch"], "microbatch_size": w["microbatch"], "datatype": w["datatype"],
        "fused_activation": m["fused_activation"], "activation_recompute": m["recompute"],
        "pipeline_interleaving": m["pipeline_interleaving"], "optimizer_sharding": m["optimizer_sharding"],
        "tensor_par_comm_type": m["tp_comm"], "tensor_par_overlap": m.get("tp_overlap", "none"),
        "seq_par_ag_redo": m["seq_par_ag_redo"], "data_par_overlap": e["estimate_options"]["data_par_overlap"],
        "weight_offload": e["estimate_options"].get("weight_offload", False),
        "activations_offload": e["estimate_options"].get("activations_offload", False),
        "optimizer_offload": e["estimate_options"].get("optimizer_offload", False),
    }


def oracle(search_path, oracle_path):
    report, want = json.load(open(search_path)), json.load(open(oracle_path))
    best = report["top"][0]
    rate = want["top"][0]["sample_rate"]
    print(f"configurations: {report['totals']['configurations']} (Calculon {want['configurations_evaluated']})")
    ok = abs(best["sample_rate"] - rate) <= 1e-9 * rate
    print(f"best sample rate {'equals' if ok else 'DIFFERS FROM'} Calculon's")
    ours = execution(best)
    tied = [t["execution"] for t in want["top"] if t["sample_rate"] == rate]
    hit = any(all(t[k] == v for k, v in ours.items()) for t in tied)
    print(f"best configuration {'is' if hit else 'IS NOT'} one of Calculon's {len(tied)} tied best")
    # The whole top K, in order: every rate equal, every configuration
    # one of Calculon's with that rate.
    same = 0
    for mine, theirs in zip(report["top"], want["top"]):
        rate_ok = abs(mine["sample_rate"] - theirs["sample_rate"]) <= 1e-9 * theirs["sample_rate"]
        ours = execution(mine)
        config_ok = any(all(t["execution"][k] == v for k, v in ours.items())
                        for t in want["top"] if t["sample_rate"] == theirs["sample_rate"])
        same += rate_ok and config_ok
    print(f"top {same} of {len(want['top'])} equal Calculon's")


def exact(search_path, oracle_path):
    report, want = json.load(open(search_path)), json.load(open(oracle_path))
    print(f"fit: {report['totals']['fit']} (Calculon good {want['good_configurations']})")
    same = 0
    for rank, (mine, theirs) in enumerate(zip(report["top"], want["top"]), 1):
        ours = execution(mine)
        config_ok = any(all(t["execution"][k] == v for k, v in ours.items())
                        for t in want["top"] if t["sample_rate"] == theirs["sample_rate"])
        ok = (mine["sample_rate"] == theirs["sample_rate"] and mine["total_time"] == theirs["total_time"] and config_ok)
        same += ok
        e = theirs["execution"]
        m = e["batch_size"] // (e["data_par"] * e["microbatch_size"])
        short = e["pipeline_interleaving"] > 1 and m % e["pipeline_par"] != 0
        print(f"rank {rank}: {'equal' if ok else 'DIFFERENT'}; pp {e['pipeline_par']} x {e['pipeline_interleaving']} chunks, "
              f"{m} microbatches{' (not a multiple of pp)' if short else ''}")
    print(f"top {same} of {len(want['top'])} equal Calculon's bit for bit")


def strip(search_path):
    report = json.load(open(search_path))
    for key in ("wall_seconds", "configurations_per_second", "threads"):
        report["totals"].pop(key, None)
    json.dump(report, sys.stdout, indent=1, sort_keys=True)
    print()


def divisors(x):
    return [c for c in range(1, x + 1) if x % c == 0]


def tier_count(search_path, tiers):
    """Calculon's space (calculon/llm/optimal_execution.py): TP divides the
    processors, hidden and heads; PP divides min(procs / TP, blocks), procs /
    TP and the blocks; the batch is the largest multiple of DP; microbatches
    divide the local batch with microbatch * seq divisible by TP; then
    recompute x optimizer sharding x tp_comm x seq_par_ag_redo x fused x TP
    overlap per key, and per key every tier of each group larger than one,
    every interleaving (divisors of blocks / PP) and DP overlap."""
    report = json.load(open(search_path))
    m, space = report["model"], report["space"]
    procs, max_batch, t = space["procs"], space["max_batch"], int(tiers)
    total = 0
    for tp in divisors(procs):
        if m["hidden"] % tp or m["heads"] % tp:
            continue
        for pp in divisors(min(procs // tp, m["blocks"])):
            if (procs // tp) % pp or m["blocks"] % pp:
                continue
            dp = procs // (tp * pp)
            if dp > max_batch:
                continue
            local = max_batch // dp
            for mb in divisors(local):
                if (mb * m["seq_len"]) % tp:
                    continue
                for recompute in ("none", "attn_only", "full"):
                    for _sharding in ([False, True] if dp > 1 else [False]):
                        for comm in ("ar", "p2p_rs_ag", "rs_ag"):
                            redo = 2 if comm == "rs_ag" and recompute != "full" else 1
                            overlap = 3 if space["tp_overlap"] and tp > 1 else 1
                            keys = redo * len(space["fused_activation"]) * overlap
                            per_key = ((t if tp > 1 else 1) * (len(divisors(m["blocks"] // pp)) if pp > 1 else 1)
                                       * (t if pp > 1 else 1) * (t if dp > 1 else 1)
                                       * (2 if dp > 1 and space["dp_overlap"] else 1))
                            total += keys * per_key
    got = report["totals"]["configurations"]
    if got == total:
        print(f"configurations match the space's count for {t} tiers ({total})")
    else:
        print(f"configurations DIFFER: search {got}, space {total} for {t} tiers")


def main():
    mode = sys.argv[1]
    if mode == "two-paths":
        two_paths(*sys.argv[2:4])
    elif mode == "oracle":
        oracle(*sys.argv[2:4])
    elif mode == "exact":
        exact(sys.argv[2], sys.argv[3])
    elif mode == "strip":
        strip(sys.argv[2])
    elif mode == "tier-count":
        tier_count(*sys.argv[2:4])
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
