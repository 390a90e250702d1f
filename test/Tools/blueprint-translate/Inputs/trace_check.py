"""Checks a --trace file against the Chrome trace-event format and against
the closed-form estimate.

Usage: trace_check.py SPEC.json ESTIMATE.json TRACE.json serialized|overlapped

The format (what Perfetto and chrome://tracing read): an object with a
`traceEvents` array; every event has `ph`, `pid`, `tid` and `ts`; complete
events (`"ph": "X"`) also a `dur`, `name` and `cat`; metadata events
(`"ph": "M"`) name processes and threads. Blueprint's trace has one
process per stage and one thread per stream, and every complete event's
`args` name its task id, stage, chunk, microbatch and phase.

The sums come from the closed form's `timing_seconds`, computed by another
path (Calculon's composition): on every stage the forward slots add up to
`fw_time`, the backward slots to `bw_time`, the recomputes to
`recompute_time`, the exposed TP communication to `tp_comm_exposed_time +
recomm_exposed_time`, the optimizer steps to `optim_step_time`; serialized,
the transfers add up to `pp_comm_exposed_time` and the DP reductions to
`dp_comm_exposed_time` (without --dp-overlap).
"""
import json
import numbers
import sys

METADATA = {"process_name", "process_sort_index", "thread_name", "thread_sort_index"}


def close(a, b):
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-30)


def main():
    spec_path, estimate_path, trace_path, mode = sys.argv[1:5]
    spec = json.load(open(spec_path))
    mapping, workload = spec["mapping"], spec["workload"]
    p, d, v = mapping["pp"], mapping["dp"], mapping.get("pipeline_interleaving", 1)
    m = workload["global_batch"] // (d * workload["microbatch"])
    report = json.load(open(estimate_path))
    timing = report["timing_seconds"]
    total_us = report["simulation"][mode]["total_time"] * 1e6

    trace = json.load(open(trace_path))
    assert isinstance(trace, dict) and isinstance(trace.get("traceEvents"), list), "an object with a traceEvents array"
    events = trace["traceEvents"]
    processes, threads, complete = {}, {}, []
    for e in events:
        assert isinstance(e, dict), e
        for key in ("ph", "pid", "tid", "ts"):
            assert key in e, f"event without {key}: {e}"
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int) and e["pid"] >= 0 and e["tid"] >= 0, e
        assert isinstance(e["ts"], numbers.Real) and e["ts"] >= 0, e
        if e["ph"] == "M":
            assert e["name"] in METADATA and isinstance(e.get("args"), dict), e
            if e["name"] == "process_name":
                processes[e["pid"]] = e["args"]["name"]
            if e["name"] == "thread_name":
                threads[(e["pid"], e["tid"])] = e["args"]["name"]
        else:
            assert e["ph"] == "X", f"unexpected phase {e['ph']}"
            assert isinstance(e.get("dur"), numbers.Real) and e["dur"] >= 0, e
            assert isinstance(e.get("name"), str) and isinstance(e.get("cat"), str), e
            args = e["args"]
            for key in ("task_id", "stage", "chunk", "microbatch", "phase"):
                assert key in args, f"event without args.{key}: {e}"
            assert isinstance(args["task_id"], str) and isinstance(args["phase"], str)
            assert 0 <= args["chunk"] < v and 0 <= args["stage"] < p, e
            assert args["microbatch"] is None or 0 <= args["microbatch"] < m, e
            assert e["ts"] + e["dur"] <= total_us * (1 + 1e-9), (e, total_us)
            complete.append(e)
    # One process per stage, named after it; every thread used is named.
    assert sorted(processes.values()) == sorted(f"stage {s}" for s in range(p)), processes
    for e in complete:
        assert processes[e["pid"]] == f"stage {e['args']['stage']}", e
        assert (e["pid"], e["tid"]) in threads, f"thread {e['tid']} of process {e['pid']} has no name"
    ids = [e["args"]["task_id"] for e in complete]
    assert len(ids) == len(set(ids)), "task ids are unique"
    # A stream does one thing at a time.
    by_thread = {}
    for e in complete:
        by_thread.setdefault((e["pid"], e["tid"]), []).append(e)
    for key, stream in by_thread.items():
        stream.sort(key=lambda e: e["ts"])
        for a, b in zip(stream, stream[1:]):
            # To a picosecond: viewers nest slices that overlap.
            assert a["ts"] + a["dur"] <= b["ts"] + 1e-6, (key, a, b)

    def kind(e):
        return e["cat"], e["args"]["phase"]

    sums = {}
    counts = {}
    for e in complete:
        key = (e["args"]["stage"],) + kind(e)
        sums[key] = sums.get(key, 0.0) + e["dur"] / 1e6
        counts[key] = counts.get(key, 0) + 1
    want = {
        ("compute", "forward"): timing["fw_time"],
        ("compute", "activation_gradient+weight_gradient"): timing["bw_time"],
        ("compute", "recompute"): timing["recompute_time"],
        ("compute", "optimizer"): timing["optim_step_time"],
    }
    for stage in range(p):
        assert counts[(stage, "compute", "forward")] == m * v
        assert counts[(stage, "compute", "activation_gradient+weight_gradient")] == m * v
        for (cat, phase), seconds in want.items():
            got = sums.get((stage, cat, phase), 0.0)
            assert close(got, seconds), (stage, cat, phase, got, seconds)
        tp = sum(s for (st, cat, _), s in sums.items() if st == stage and cat == "tp")
        tp_want = timing["tp_comm_exposed_time"] + timing["recomm_exposed_time"]
        assert close(tp, tp_want), (stage, tp, tp_want)
        if mode == "serialized":
            pp = sum(s for (st, cat, _), s in sums.items() if st == stage and cat == "pp")
            dp = sum(s for (st, cat, _), s in sums.items() if st == stage and cat == "dp")
            assert close(pp, timing["pp_comm_exposed_time"]), (stage, pp, timing["pp_comm_exposed_time"])
            assert close(dp, timing["dp_comm_exposed_time"]), (stage, dp, timing["dp_comm_exposed_time"])
    print(f"trace: {len(complete)} complete events in {len(processes)} processes and {len(threads)} threads, "
          f"in the trace-event format")
    print(f"trace: every stage's forward, backward, recompute, optimizer and exposed TP time equals the closed form's"
          + (", and its transfers and DP reductions too" if mode == "serialized" else ""))


main()
