#!/usr/bin/env python3
"""Checks blueprint-search's output for people against its JSON report and
against figures computed here.

  output_check.py table SEARCH.json TABLE.txt SYSTEM.json
      the table's rows are the report's top entries in rank order; its
      field columns are exactly the fields that differ between those
      entries (found here from the JSON) and the others are listed once,
      with their values, as the same in every row; samples/s, step time and
      GiB per processor are the report's; MFU agrees within 3% with
      Megatron-LM's analytical count of a GPT block's forward and backward
      (72 s l h^2 (1 + s / 6h) per sample, Narayanan et al. 2021, without
      recompute or LM head) over the step time x processors x the system
      file's matrix peak
  output_check.py csv SEARCH.json TABLE.csv
      one CSV row per top entry, every field and figure equal to the JSON's
  output_check.py headroom ALL.json HEADROOM.json GIB
      ALL holds every fitting configuration of a space (no headroom);
      HEADROOM is the same search with --headroom GIB: its ranking is ALL's
      without the configurations needing more than the tier less GIB, those
      are its memory_headroom count, and its nearest miss is the one of
      them with the least excess (then the faster, then the first), found
      here from ALL
"""
import csv
import json
import re
import sys

GIB = 2**30
# (column, path in an entry, value when absent)
FIELDS = [
    ("tp", "mapping.tp", None), ("pp", "mapping.pp", None), ("dp", "mapping.dp", None),
    ("pipeline_interleaving", "mapping.pipeline_interleaving", None),
    ("global_batch", "workload.global_batch", None), ("microbatch", "workload.microbatch", None),
    ("recompute", "mapping.recompute", None), ("tp_comm", "mapping.tp_comm", None),
    ("seq_par_ag_redo", "mapping.seq_par_ag_redo", None), ("fused_activation", "mapping.fused_activation", None),
    ("optimizer_sharding", "mapping.optimizer_sharding", None), ("tp_overlap", "mapping.tp_overlap", "none"),
    ("tp_net", "networks.tp", None), ("pp_net", "networks.pp", None), ("dp_net", "networks.dp", None),
    ("dp_overlap", "estimate_options.data_par_overlap", None),
]
# Shown when the space explores offload (a second memory tier).
OFFLOAD_FIELDS = [
    ("weight_offload", "estimate_options.weight_offload", None),
    ("activations_offload", "estimate_options.activations_offload", None),
    ("optimizer_offload", "estimate_options.optimizer_offload", None),
]


def value(entry, path, absent):
    at = entry
    for key in path.split("."):
        if key not in at:
            return absent
        at = at[key]
    return json.dumps(at) if isinstance(at, bool) else str(at)


def need(entry):
    return entry["per_processor"]["proc_mem_tier1_cap_req"]


def check_table(search_path, table_path, system_path):
    report = json.load(open(search_path))
    lines = open(table_path).read().splitlines()
    top = report["top"]
    fields = FIELDS + (OFFLOAD_FIELDS if report["space"]["offload"] else [])
    rows = [{name: value(e, path, absent) for name, path, absent in fields} for e in top]
    differ = {name for name, _, _ in fields if len({r[name] for r in rows}) > 1}
    header_at = next(i for i, l in enumerate(lines) if l.startswith("rank"))
    headers = re.split(r"\s{2,}", lines[header_at].strip())
    assert headers[:2] == ["rank", "index"] and headers[-4:] == ["samples/s", headers[-3], "MFU", "GiB/proc"], headers
    assert headers[-3] in ("step ms", "step s"), headers
    shown = headers[2:-4]
    assert set(shown) == differ, f"columns {shown}, fields that differ {sorted(differ)}"
    same = next((l for l in lines[:header_at] if l.startswith("Same in every row: ")), "")
    listed = dict(pair.rsplit(" ", 1) for pair in same[len("Same in every row: "):].split(", ") if pair)
    assert listed == {n: rows[0][n] for n, _, _ in fields if n not in differ}, (listed, rows[0])
    system = json.load(open(system_path))
    peak = system["matrix"][report["space"]["datatype"]]["tflops"] * 1e12
    m = report["model"]
    assert m["ffn_hidden"] == 4 * m["hidden"] and not m.get("gated_mlp"), "the analytical count is for GPT blocks"
    s, h, l = m["seq_len"], m["hidden"], m["blocks"]
    per_sample = 72 * s * l * h * h * (1 + s / (6 * h))
    scale = 1e3 if headers[-3] == "step ms" else 1.0
    body = lines[header_at + 1: header_at + 1 + len(top)]
    for rank, (line, entry, row) in enumerate(zip(body, top, rows), 1):
        cells = re.split(r"\s{2,}", line.strip())
        assert len(cells) == len(headers), (cells, headers)
        assert int(cells[0]) == rank and int(cells[1]) == entry["index"], (cells, entry["index"])
        for name, cell in zip(shown, cells[2:-4]):
            assert cell == row[name], (name, cell, row[name])
        rate, step, mfu, gib = cells[-4:]
        assert abs(float(rate) / entry["sample_rate"] - 1) < 1e-4, (rate, entry["sample_rate"])
        assert abs(float(step) / scale / entry["total_time"] - 1) < 1e-4, (step, entry["total_time"])
        assert abs(float(gib) - need(entry) / GIB) <= 0.005, (gib, need(entry))
        m_procs = entry["mapping"]["tp"] * entry["mapping"]["pp"] * entry["mapping"]["dp"]
        expected = per_sample * entry["workload"]["global_batch"] / (entry["total_time"] * m_procs * peak)
        got = float(mfu.rstrip("%")) / 100
        assert abs(got / expected - 1) < 0.03, f"MFU {got}, analytical {expected}"
        assert abs(entry["mfu"] - got) <= 0.0005 + 1e-12, (entry["mfu"], got)
    print(f"table: {len(top)} rows in rank order; columns {', '.join(shown)} (the fields that differ); "
          f"the other {len(fields) - len(shown)} fields once; MFU within 3% of the analytical count")


def check_csv(search_path, csv_path):
    report = json.load(open(search_path))
    rows = list(csv.DictReader(open(csv_path)))
    assert len(rows) == len(report["top"])
    fields = FIELDS + (OFFLOAD_FIELDS if report["space"]["offload"] else [])
    for rank, (row, entry) in enumerate(zip(rows, report["top"]), 1):
        assert int(row["rank"]) == rank and int(row["index"]) == entry["index"]
        assert set(row) == {"rank", "index", *(n for n, _, _ in fields), "sample_rate", "step_seconds", "mfu",
                            "memory_bytes_per_processor", "memory_gib_per_processor"}, sorted(row)
        for name, path, absent in fields:
            assert row[name] == value(entry, path, absent), (name, row[name])
        assert float(row["sample_rate"]) == entry["sample_rate"]
        assert float(row["step_seconds"]) == entry["total_time"]
        assert float(row["mfu"]) == entry["mfu"]
        assert float(row["memory_bytes_per_processor"]) == need(entry)
    print(f"csv: {len(rows)} rows, every field and figure equal to the JSON report's")


def order(entry):
    return (-entry["sample_rate"], entry["index"])


def check_headroom(all_path, headroom_path, gib):
    every, kept = json.load(open(all_path)), json.load(open(headroom_path))
    assert every["totals"]["fit"] == len(every["top"]), "ALL must list every fitting configuration (--top)"
    capacity = every["space"]["memory_limit_bytes"]
    assert every["space"]["headroom_bytes"] == 0
    limit = capacity - float(gib) * GIB
    assert kept["space"]["memory_limit_bytes"] == limit, (kept["space"]["memory_limit_bytes"], limit)
    inside = sorted((e for e in every["top"] if need(e) <= limit), key=order)
    outside = [e for e in every["top"] if need(e) > limit]
    assert inside and outside, "the headroom must split the space"
    assert [e["index"] for e in kept["top"]] == [e["index"] for e in inside[:len(kept["top"])]]
    for e in kept["top"]:
        assert need(e) <= limit
    assert kept["totals"]["fit"] == len(inside), (kept["totals"]["fit"], len(inside))
    pruned = kept["totals"]["pruned"]["memory_headroom"]
    assert pruned["count"] == len(outside), (pruned["count"], len(outside))
    nearest = min(outside, key=lambda e: (need(e) - limit, -e["sample_rate"], e["index"]))
    first = min(outside, key=lambda e: e["index"])
    got = pruned["nearest"]
    assert got["configuration"]["index"] == nearest["index"], (got["configuration"]["index"], nearest["index"])
    assert got["over_by_bytes"] == need(nearest) - limit
    print(f"headroom: {len(inside)} of {len(every['top'])} configurations fit in {capacity / GIB:g} - {gib} GiB, "
          f"ranked as without it; the nearest miss is the least excess"
          + (" (not the first)" if nearest["index"] != first["index"] else ""))


def main():
    mode = sys.argv[1]
    if mode == "table":
        check_table(*sys.argv[2:5])
    elif mode == "csv":
        check_csv(*sys.argv[2:4])
    elif mode == "headroom":
        check_headroom(*sys.argv[2:5])
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
