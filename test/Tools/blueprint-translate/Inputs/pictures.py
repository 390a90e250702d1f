"""Checks the estimate's simulation and pictures against the spec.

Usage: pictures.py SPEC.json ESTIMATE.json TIMELINE.svg MEMORY.svg

Counts come from the spec alone: every stage runs each of its
microbatches through each of its chunks forward and backward once, and
with TP > 1 each of those slots has exposed TP communication. The memory
totals and the capacity come from the estimate's report.
"""
import json
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"
PARTS = ("weight_space", "weight_grad_space", "optimizer_space", "act_space", "act_checkpoint_size", "act_grad_space")


def check_timeline(path, p, d, v, m, tp):
    root = ET.parse(path).getroot()
    width = float(root.get("width"))
    assert width <= 1600, f"the timeline is {width} px wide, more than a 1600 px window"
    # Bars are the rects inside the rows; merged runs carry their count.
    rows = [g for g in root.iter(SVG + "g") if g.get("class") == "row"]
    bars = [r for g in rows for r in g.iter(SVG + "rect") if r.get("class") != "bubble"]
    counts = {}
    for rect in bars:
        # A bar cut by a band's start continues one counted in the band before.
        if rect.get("data-continued") != "true":
            counts[rect.get("class")] = counts.get(rect.get("class"), 0) + int(rect.get("data-count"))
        assert float(rect.get("width")) >= 2.0, f"a {rect.get('class')} bar {rect.get('width')} px wide"
        assert rect.find(SVG + "title") is not None
    assert counts.get("forward") == p * v * m, (counts.get("forward"), p * v * m)
    assert counts.get("backward") == p * v * m, (counts.get("backward"), p * v * m)
    single = [r for r in bars if r.get("class") in ("forward", "backward") and r.get("data-count") == "1"]
    for rect in single:
        assert int(rect.get("data-microbatch")) < m and int(rect.get("data-chunk")) < v
    if len(single) == 2 * p * v * m:
        pairs = {(r.get("data-microbatch"), r.get("data-chunk")) for r in single if r.get("class") == "forward"}
        assert len(pairs) == m * v
    if d > 1:
        assert counts.get("dp-reduction") == p * v, counts.get("dp-reduction")
    if tp > 1:
        # Exposed TP communication: one bar per forward and backward slot.
        assert counts.get("tp-forward") == p * v * m, counts.get("tp-forward")
        assert counts.get("tp-backward") == p * v * m, counts.get("tp-backward")
    else:
        assert "tp-forward" not in counts and "tp-backward" not in counts, counts
    # Tracks: compute for every stage, TP with TP > 1, PP transfers with
    # PP > 1, DP with DP > 1, in every band.
    bands = [g for g in root.iter(SVG + "g") if g.get("class") == "band"]
    want = {(str(s), "compute") for s in range(p)}
    want |= {(str(s), "tp") for s in range(p)} if tp > 1 else set()
    want |= {(str(s), "pp") for s in range(p)} if p > 1 else set()
    want |= {(str(s), "dp") for s in range(p)} if d > 1 else set()
    assert bands
    for band in bands:
        have = {(g.get("data-stage"), g.get("data-track")) for g in band.iter(SVG + "g") if g.get("class") == "row"}
        assert have == want, (sorted(have), sorted(want))
    bubbles = [r for g in rows for r in g.iter(SVG + "rect") if r.get("class") == "bubble"]
    assert len(bubbles) >= p, "every stage idles in the bubble"
    labels = [t.text for t in root.iter(SVG + "text") if t.get("class") == "row-label"]
    assert labels[0] == "stage 0" and f"stage {p - 1}" in labels
    numbers = [int(t.text) for t in root.iter(SVG + "text") if t.get("class") == "microbatch"]
    assert numbers and max(numbers) == m - 1, "microbatch numbers, up to the last, where they fit"
    # Every colour on a bar has a legend entry.
    legend = {}
    for g in root.iter(SVG + "g"):
        if g.get("class") == "legend":
            items = list(g)
            for rect, text in zip(items[0::2], items[1::2]):
                legend[rect.get("fill")] = text.text
    assert {"forward", "backward", "bubble (idle)"} <= set(legend.values()), legend
    used = {r.get("fill") for r in bars + bubbles}
    assert used <= set(legend), f"colours without a legend entry: {used - set(legend)}"
    print(f"timeline: {counts['forward']} forward and {counts['backward']} backward slots, {len(bands)} band(s), "
          f"{len(want) // p} track(s) per stage, every colour in the legend")


def check_memory(path, p, report):
    root = ET.parse(path).getroot()
    stages = [g for g in root.iter(SVG + "g") if g.get("class") == "stage"]
    assert len(stages) == p
    capacity = report["capacity_bytes"]
    peak = max(stage["memory"]["proc_mem_tier1_cap_req"] for stage in report["stages"])
    ticks = [float(t.text) for g in root.iter(SVG + "g") if g.get("class") == "axis"
             for t in g.iter(SVG + "text") if t.text and t.text.replace(".", "").isdigit()]
    axis_top = max(ticks) * 2**30
    for g, stage in zip(stages, report["stages"]):
        parts = {r.get("class"): r for r in g.iter(SVG + "rect")}
        mem = stage["memory"]
        assert set(parts) == {f for f in PARTS if mem[f] > 0}, (set(parts), mem)
        assert sum(float(r.get("height")) for r in parts.values()) > 0
        total = [t for t in g.iter(SVG + "text") if t.get("class") == "total"]
        assert len(total) == 1, "one total label per stack"
        shown, want = float(total[0].text), mem["proc_mem_tier1_cap_req"] / 2**30
        assert abs(shown - want) <= 0.006 * want, (shown, want)
    capacity_g = [g for g in root.iter(SVG + "g") if g.get("class") == "capacity"]
    assert len(capacity_g) == 1
    on_scale = capacity_g[0].get("data-on-scale") == "true"
    if on_scale:
        assert capacity_g[0].find(SVG + "line") is not None
        scale_top = max(peak, capacity)
    else:
        note = "".join(capacity_g[0].itertext())
        assert "off this scale" in note and capacity > axis_top, note
        scale_top = peak
    # The axis follows the data: above the largest stack (or the capacity
    # line) but within a factor 2 of it.
    assert scale_top <= axis_top < 2 * scale_top, (axis_top, scale_top)
    print(f"memory: {len(stages)} stacked bars labelled with their totals, axis to {max(ticks):g} GiB, capacity "
          + ("drawn" if on_scale else "noted above the plot"))


def main():
    spec_path, estimate_path, timeline_path, memory_path = sys.argv[1:5]
    spec = json.load(open(spec_path))
    mapping, workload = spec["mapping"], spec["workload"]
    p, d, v, tp = mapping["pp"], mapping["dp"], mapping.get("pipeline_interleaving", 1), mapping["tp"]
    m = workload["global_batch"] // (d * workload["microbatch"])
    report = json.load(open(estimate_path))
    closed = report["timing_seconds"]["total_time"]
    sim = report["simulation"]
    serialized, overlapped = sim["serialized"]["total_time"], sim["overlapped"]["total_time"]
    assert abs(serialized - closed) <= 1e-12 * closed, (serialized, closed)
    assert overlapped < serialized, (overlapped, serialized)
    assert len(sim["overlapped"]["stages"]) == p
    for stage in sim["overlapped"]["stages"]:
        assert abs(stage["busy_seconds"] + stage["idle_seconds"] - overlapped) <= 1e-12 * overlapped
    print(f"simulated: serialized equals the closed form; overlapped is {100 * (1 - overlapped / serialized):.1f}% shorter")
    check_timeline(timeline_path, p, d, v, m, tp)
    check_memory(memory_path, p, report)


main()
