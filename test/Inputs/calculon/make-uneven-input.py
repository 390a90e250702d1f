"""Writes uneven-cases.input.json: random valid configurations with uneven
pipelines as Calculon evaluates them, for record-estimate-cases.py:
`pipeline_par` not dividing the blocks (Calculon rounds the blocks per
processor up and reports the fullest stage, its bubble shortened by the
missing blocks of the later stages), and interleaved 1F1B with a microbatch
count that is not a multiple of `pipeline_par` (extra bubbles). Three
systems, every recompute mode and TP communication, TP / DP variety, some
DP overlap and offload. Deterministic (fixed seed):

    python3 make-uneven-input.py > uneven-cases.input.json
"""
import random

from cases_common import divisors, print_unique

MODELS = {  # Calculon's model files: (blocks, heads, hidden, ffn)
    'megatron-126M': (12, 16, 768, 3072), 'megatron-5B': (24, 32, 4096, 16384), 'gpt3-13B': (40, 40, 5140, 20560),
    'megatron-22B': (48, 64, 6144, 24576), 'turing-530B': (105, 128, 20480, 81920), 'palm-540B': (118, 48, 18432, 73728),
    'chinchilla': (80, 64, 8192, 32768), 'gpt3-175B': (96, 96, 12288, 49152),
}
SYSTEMS = ['a100_80e', 'a100_80g', 'h100_80g_nvl8']  # the 80 GB ones for the two small models


def ceil_div(a, b):
    return -(-a // b)


def case(rng, uneven_blocks, interleaved_short, offload=None):
    while True:
        model = rng.choice(list(MODELS))
        blocks, heads, hidden, ffn = MODELS[model]
        tp = rng.choice([1, 2, 4, 8])
        if heads % tp or hidden % tp or ffn % tp:
            continue
        pps = [p for p in range(2, 17) if (blocks % p != 0) == uneven_blocks and p <= blocks]
        pp = rng.choice(pps)
        bpp = ceil_div(blocks, pp)
        if offload and bpp < 3:
            continue
        vs = [d for d in divisors(bpp) if d <= 6]
        if interleaved_short:
            vs = [d for d in vs if d > 1]
            if not vs:
                continue
        v = rng.choice(vs)
        dp = rng.choice([1, 2, 4])
        mbs = rng.choice([1, 2])
        if interleaved_short:
            m = rng.choice([k for k in range(1, 3 * pp) if k % pp])
        else:
            m = rng.choice([1, 2, 3, pp, 2 * pp, 3 * pp + 1])
        tp_comm = rng.choice(['ar', 'rs_ag', 'p2p_rs_ag'])
        recompute = rng.choice(['none', 'attn_only', 'full'])
        if offload and offload.get('activations') and recompute == 'full':
            continue
        overlap = rng.choice(['none', 'none', 'ring', 'pipe']) if tp > 1 else 'none'
        redo = tp_comm == 'rs_ag' and recompute != 'full' and rng.random() < 0.5
        if offload and model not in ('megatron-126M', 'megatron-5B'):
            continue
        system = rng.choice(SYSTEMS) if not offload else 'a100_80g'
        if model not in ('megatron-126M', 'megatron-5B') or recompute == 'none':
            system = 'a100_80e'  # tier 1 is never the limit there
        mapping = dict(tp=tp, pp=pp, dp=dp, pipeline_interleaving=v, recompute=recompute, tp_comm=tp_comm,
                       seq_par_ag_redo=redo, fused_activation=rng.random() < 0.5,
                       optimizer_sharding=dp > 1 and rng.random() < 0.5, tp_overlap=overlap)
        workload = dict(global_batch=dp * mbs * m, microbatch=mbs, datatype='float16')
        name = f'{model}-t{tp}p{pp}d{dp}v{v}-mbs{mbs}-n{m}-{recompute}-{tp_comm}-{system}-{overlap}'
        c = dict(name=name, model=model, workload=workload, mapping=mapping, system=system,
                 networks=dict(tp=0, pp=1, dp=1))
        if offload:
            c['offload'] = offload
            c['name'] += '-offload-' + '-'.join(k for k in ('weight', 'activations', 'optimizer') if offload.get(k))
        if dp > 1 and rng.random() < 0.3:
            c['overlap'] = dict(dp=True)
        return c


rng = random.Random(2705)
cases = [case(rng, True, False) for _ in range(10)]          # blocks % pp != 0
cases += [case(rng, True, True) for _ in range(6)]            # both
cases += [case(rng, False, True) for _ in range(6)]           # interleaving, m % pp != 0
cases += [case(rng, True, False, dict(weight=True, optimizer=True)), case(rng, True, True, dict(activations=True))]
print_unique(cases)
