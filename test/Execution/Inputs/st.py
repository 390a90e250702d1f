#!/usr/bin/env python3
"""Writes safetensors files for the error cases of --train-step without
JAX or numpy: the parameters and inputs of a GPT-family spec (layer norms,
ungated MLP), filled with small values, optionally broken one way.

usage: st.py SPEC PARAMS INPUTS [--drop NAME] [--extra NAME] [--reshape NAME] [--f16 NAME] [--duplicate NAME]
       st.py --garbage FILE
       st.py --long-header FILE
"""
import json
import struct
import sys


def write(path, tensors, duplicate=None):
    """tensors: name -> (dtype, shape, float values); `duplicate` names a
    tensor whose header entry is written twice (the second one first)."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        dtype, shape, values = tensors[name]
        if dtype == "F32":
            blob = struct.pack("<%df" % len(values), *values)
        else:  # F16
            blob = struct.pack("<%de" % len(values), *values)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    if duplicate is not None:
        text = b"{" + json.dumps(duplicate).encode() + b": " + json.dumps(header[duplicate]).encode() + b", " + text[1:]
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def main(argv):
    if argv[0] == "--garbage":
        open(argv[1], "wb").write(b"not a safetensors file")
        return 0
    if argv[0] == "--long-header":
        # A header length of 2^40 in a 24-byte file.
        open(argv[1], "wb").write(struct.pack("<Q", 2**40) + b"{}" + b" " * 14)
        return 0
    spec_path, params_path, inputs_path, *edits = argv
    spec = json.load(open(spec_path))
    m, w = spec["model"], spec["workload"]
    h, f, q = m["hidden"], m["ffn_hidden"], m["heads"] * m["head_dim"]
    kv = m.get("kv_heads", m["heads"]) * m["head_dim"]
    block = {
        "attn.ln.scale": [h], "attn.ln.bias": [h], "attn.q.weight": [h, q], "attn.k.weight": [h, kv],
        "attn.v.weight": [h, kv], "attn.proj.weight": [q, h], "mlp.ln.scale": [h], "mlp.ln.bias": [h],
        "mlp.fc1.weight": [h, f], "mlp.fc2.weight": [f, h],
    }
    params = {"blocks.%d.%s" % (i, n): s for i in range(m["blocks"]) for n, s in block.items()}
    act = [w["global_batch"], m["seq_len"], h]
    inputs = {"block.in": act, "block.out.grad": act}
    files = [params, inputs]
    dtypes = {}
    duplicate = None
    it = iter(edits)
    for flag in it:
        name = next(it)
        where = next(d for d in files if name in d) if flag != "--extra" else params
        if flag == "--drop":
            del where[name]
        elif flag == "--extra":
            where[name] = [2]
        elif flag == "--reshape":
            where[name] = where[name] + [1]
        elif flag == "--f16":
            dtypes[name] = "F16"
        elif flag == "--duplicate":
            duplicate = name
    for path, shapes in zip([params_path, inputs_path], files):
        tensors = {}
        for name, shape in shapes.items():
            n = 1
            for d in shape:
                n *= d
            tensors[name] = (dtypes.get(name, "F32"), shape, [0.01 * ((i % 7) - 3) for i in range(n)])
        write(path, tensors, duplicate if duplicate in tensors else None)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
