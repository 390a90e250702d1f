#!/usr/bin/env python3
"""Checks the sums of a served estimate (blueprint-translate --estimate on an
inference plan) from its own figures: each pass is blocks x (block + TP) plus
(pp - 1) transfers, the time to the first token is the prefill, the
generation bound is the prefill plus `generated` decode steps, the rate is
the batch over a step, and the memory total adds up.

usage: served-check.py REPORT.json BLOCKS BATCH GENERATED PP
"""
import json
import sys

report, blocks, batch, generated, pp = sys.argv[1], *map(int, sys.argv[2:6])
s = json.load(open(report))["served"]


def close(a, b):
    return abs(a - b) <= 1e-12 * max(abs(a), abs(b))


for name in ["prefill", "decode_at_final_context"]:
    p = s[name]
    want = blocks * (p["block_time"] + p["block_tp_time"]) + (pp - 1) * p["pp_transfer_time"]
    assert close(p["time"], want), (name, p["time"], want)
    assert (p["pp_transfer_time"] > 0) == (pp > 1), (name, p)
    assert p["block_time"] > 0 and p["block_tp_time"] > 0, p
assert s["time_to_first_token"] == s["prefill"]["time"]
step = s["decode_at_final_context"]["time"]
assert close(s["generation_time_at_most"], s["prefill"]["time"] + generated * step)
assert close(s["decode_tokens_per_second_at_least"], batch / step)
assert step < s["prefill"]["time"]
m = s["memory"]
assert m["blocks_per_rank"] == -(-blocks // pp)
assert m["total"] == m["weights"] + m["kv_cache"] + m["activation_working"]
assert m["fits"] == (m["total"] <= m["capacity"])
print("passes = blocks x (block + TP) + (pp - 1) transfers; ttft = prefill; "
      f"generation = prefill + {generated} decode steps; rate = {batch} / step; memory adds up")
