"""Checks the estimate's simulation and pictures against the spec.

Usage: pictures.py SPEC.json ESTIMATE.json TIMELINE.svg MEMORY.svg

Counts come from the spec alone: every stage runs each of its
microbatches through each of its chunks forward and backward once.
"""
import json
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def main():
    spec_path, estimate_path, timeline_path, memory_path = sys.argv[1:5]
    spec = json.load(open(spec_path))
    mapping, workload = spec["mapping"], spec["workload"]
    p, d, v = mapping["pp"], mapping["dp"], mapping.get("pipeline_interleaving", 1)
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

    root = ET.parse(timeline_path).getroot()
    classes = {}
    for rect in root.iter(SVG + "rect"):
        classes.setdefault(rect.get("class"), []).append(rect)
    forward, backward = classes.get("forward", []), classes.get("backward", [])
    assert len(forward) == p * v * m, (len(forward), p * v * m)
    assert len(backward) == p * v * m, (len(backward), p * v * m)
    for rect in forward + backward:
        assert rect.find(SVG + "title") is not None
        assert float(rect.get("width")) > 0
        assert int(rect.get("data-microbatch")) < m and int(rect.get("data-chunk")) < v
    pairs = {(r.get("data-microbatch"), r.get("data-chunk")) for r in forward}
    assert len(pairs) == m * v
    if d > 1:
        assert len(classes.get("dp-reduction", [])) == p * v
    assert len(classes.get("bubble", [])) >= p, "every stage idles in the bubble"
    labels = [t.text for t in root.iter(SVG + "text") if t.get("class") == "row-label"]
    assert labels[0] == "stage 0" and f"stage {p - 1}" in labels
    legend = [t.text for g in root.iter(SVG + "g") if g.get("class") == "legend" for t in g.iter(SVG + "text")]
    assert {"forward", "backward", "bubble (idle)"} <= set(legend), legend
    print(f"timeline: {len(forward)} forward and {len(backward)} backward bars, one per scheduled slot")

    root = ET.parse(memory_path).getroot()
    stages = [g for g in root.iter(SVG + "g") if g.get("class") == "stage"]
    assert len(stages) == p
    for g, stage in zip(stages, report["stages"]):
        parts = {r.get("class"): r for r in g.iter(SVG + "rect")}
        mem = stage["memory"]
        for field, rect in parts.items():
            assert mem[field] > 0, field
        assert set(parts) == {f for f in ("weight_space", "weight_grad_space", "optimizer_space", "act_space", "act_checkpoint_size", "act_grad_space") if mem[f] > 0}
        heights = sum(float(r.get("height")) for r in parts.values())
        assert heights > 0
    assert any(g.get("class") == "capacity" for g in root.iter(SVG + "g"))
    print(f"memory: {len(stages)} stacked bars and the capacity line")


main()
