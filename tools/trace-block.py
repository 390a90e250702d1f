#!/usr/bin/env python3
"""Trace one Transformer block's forward and backward on a CUDA device.

Investigation aid for calibration (not used by any estimate): runs the GPT
and Llama blocks that ../shared/oracles/h200/README.md describes (eager
PyTorch, bf16, SDPA) under torch.profiler and writes, per block, every
aten op the block issues (with input shapes, host and device time) and every
kernel it launches (name, device time), in program order, plus the block's
forward+backward wall time by CUDA events. It answers "which kernels is a
LayerNorm backward", "does a linear with bias fuse its bias", "how much of a
small block is launch gaps" when a per-kernel model is fitted.

usage: trace-block.py OUTPUT.json [NAME ...]   (names: see BLOCKS)
"""

import json
import statistics
import sys

import torch
import torch.nn.functional as F

BLOCKS = {
    "gpt-h2560-b1": dict(kind="gpt", hidden=2560, heads=32, kv=32, ffn=10240, seq=2048, mb=1),
    "gpt-h4096-b1": dict(kind="gpt", hidden=4096, heads=32, kv=32, ffn=16384, seq=2048, mb=1),
    "llama3-8B": dict(kind="llama", hidden=4096, heads=32, kv=8, ffn=14336, seq=8192, mb=1),
    "llama2-7B": dict(kind="llama", hidden=4096, heads=32, kv=32, ffn=11008, seq=4096, mb=1),
}


def make_block(c):
    dt, dev = torch.bfloat16, "cuda"
    h, a, kv, f = c["hidden"], c["heads"], c["kv"], c["ffn"]
    d = h // a

    def p(*shape, scale=0.02):
        return (torch.randn(*shape, device=dev, dtype=dt) * scale).requires_grad_()

    if c["kind"] == "gpt":
        W = dict(ln1w=p(h, scale=1), ln1b=p(h), qkv=p(3 * h, h), qkvb=p(3 * h), proj=p(h, h), projb=p(h),
                 ln2w=p(h, scale=1), ln2b=p(h), fc1=p(f, h), fc1b=p(f), fc2=p(h, f), fc2b=p(h))

        def block(x):
            b, s, _ = x.shape
            y = F.layer_norm(x, (h,), W["ln1w"], W["ln1b"])
            qkv = F.linear(y, W["qkv"], W["qkvb"]).view(b, s, 3, a, d).permute(2, 0, 3, 1, 4)
            o = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], dropout_p=0.1, is_causal=True)
            o = o.transpose(1, 2).reshape(b, s, h)
            x = x + F.dropout(F.linear(o, W["proj"], W["projb"]), 0.1)
            y = F.layer_norm(x, (h,), W["ln2w"], W["ln2b"])
            return x + F.dropout(F.linear(F.gelu(F.linear(y, W["fc1"], W["fc1b"])), W["fc2"], W["fc2b"]), 0.1)

        return block, W
    W = dict(n1=p(h, scale=1), q=p(h, h), kv=p(2 * kv * d, h), o=p(h, h), n2=p(h, scale=1), gu=p(2 * f, h), down=p(h, f))
    pos = torch.arange(c["seq"], device=dev, dtype=torch.float32)
    inv = 1.0 / (500000 ** (torch.arange(0, d, 2, device=dev, dtype=torch.float32) / d))
    ang = torch.outer(pos, inv)
    cos = torch.cat([ang.cos(), ang.cos()], -1).to(dt)
    sin = torch.cat([ang.sin(), ang.sin()], -1).to(dt)

    def rope(t):
        t1, t2 = t[..., : d // 2], t[..., d // 2 :]
        return t * cos + torch.cat([-t2, t1], -1) * sin

    def block(x):
        b, s, _ = x.shape
        y = F.rms_norm(x, (h,), W["n1"])
        q = F.linear(y, W["q"]).view(b, s, a, d).transpose(1, 2)
        k, v = F.linear(y, W["kv"]).view(b, s, 2, kv, d).permute(2, 0, 3, 1, 4)
        o = F.scaled_dot_product_attention(rope(q), rope(k), v, is_causal=True, enable_gqa=kv != a)
        x = x + F.linear(o.transpose(1, 2).reshape(b, s, h), W["o"])
        y = F.rms_norm(x, (h,), W["n2"])
        g, u = F.linear(y, W["gu"]).chunk(2, -1)
        return x + F.linear(F.silu(g) * u, W["down"])

    return block, W


def run(name, c):
    block, _ = make_block(c)
    x = torch.randn(c["mb"], c["seq"], c["hidden"], device="cuda", dtype=torch.bfloat16, requires_grad=True)
    g = torch.randn_like(x)

    def step():
        block(x).backward(g)

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(8):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        step()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) / 1e3)
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        step()
        torch.cuda.synchronize()
    kernels, ops = [], []
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            kernels.append({"name": e.name[:160], "us": e.device_time, "start_us": e.time_range.start})
        elif e.name.startswith("aten::") and e.cpu_parent is not None and not e.cpu_parent.name.startswith("aten::"):
            ops.append({"op": e.name, "shapes": [list(s) for s in e.input_shapes if s], "host_us": e.cpu_time_total, "device_us": e.device_time_total, "start_us": e.time_range.start})
    kernels.sort(key=lambda k: k["start_us"])
    ops.sort(key=lambda o: o["start_us"])
    return {"config": c, "fwd_bwd_s": statistics.median(times), "kernels": kernels, "top_ops": ops}


def main():
    out = sys.argv[1]
    names = sys.argv[2:] or list(BLOCKS)
    result = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0), "blocks": {}}
    for n in names:
        result["blocks"][n] = run(n, BLOCKS[n])
        print(n, result["blocks"][n]["fwd_bwd_s"], len(result["blocks"][n]["kernels"]), "kernels", file=sys.stderr)
    with open(out, "w") as f:
        json.dump(result, f, indent=0)


if __name__ == "__main__":
    main()
