"""Writes inference-cases.input.json: random valid configurations of Calculon's
inference step (training = false: the whole model's forward pass, no recompute,
no DP overlap), for record-estimate-cases.py. Deterministic (fixed seed):

    python3 make-inference-input.py > inference-cases.input.json
"""
import random

from cases_common import divisors, print_unique

MODELS = {  # Calculon's model files: (blocks, heads, hidden, ffn)
    'megatron-126M': (12, 16, 768, 3072), 'megatron-5B': (24, 32, 4096, 16384), 'gpt3-13B': (40, 40, 5140, 20560),
    'megatron-22B': (48, 64, 6144, 24576), 'gpt3-175B': (96, 96, 12288, 49152), 'turing-530B': (105, 128, 20480, 81920),
    'anthropic-52B': (64, 64, 8192, 32768), 'megatron-1T': (128, 160, 25600, 102400),
}
SYSTEMS = ['a100_80e', 'a100_80g', 'h100_80g_nvl8', 'a100_80g_roofline']


def case(rng, forced_tp=None, forced_overlap=None, forced_pp=None):
    while True:
        model = rng.choice(list(MODELS))
        blocks, heads, hidden, ffn = MODELS[model]
        tp = forced_tp or rng.choice([1, 2, 4, 8])
        if heads % tp or hidden % tp or ffn % tp:
            continue
        pps = [d for d in divisors(blocks) if d <= 8 and (forced_pp is None or (d > 1) == forced_pp)]
        if not pps:
            continue
        pp = rng.choice(pps)
        v = rng.choice([d for d in divisors(blocks // pp) if d <= 4]) if pp > 1 else 1
        dp = rng.choice([1, 2, 4])
        mbs = rng.choice([1, 2, 4])
        m = rng.choice([1, 2, 3, 4, 8])
        if v > 1:
            m = pp * rng.choice([1, 2])
        tp_comm = rng.choice(['ar', 'rs_ag', 'p2p_rs_ag'])
        overlap = forced_overlap or (rng.choice(['none', 'none', 'ring', 'pipe']) if tp > 1 else 'none')
        if overlap != 'none' and tp == 1:
            continue
        system = rng.choice(SYSTEMS)
        if model not in ('megatron-126M', 'megatron-5B', 'gpt3-13B'):
            system = 'a100_80e'  # memory is never the limit there
        datatype = rng.choice(['float16', 'float8']) if system == 'h100_80g_nvl8' else 'float16'
        mapping = dict(tp=tp, pp=pp, dp=dp, pipeline_interleaving=v, recompute='none', tp_comm=tp_comm,
                       seq_par_ag_redo=False, fused_activation=rng.random() < 0.5,
                       optimizer_sharding=dp > 1 and rng.random() < 0.5, tp_overlap=overlap)
        workload = dict(global_batch=dp * mbs * m, microbatch=mbs, datatype=datatype)
        attention = 'multiquery' if rng.random() < 0.25 else 'multihead'
        c = dict(name=f'{model}-t{tp}p{pp}d{dp}v{v}-mbs{mbs}-n{m}-{tp_comm}-{system}-{overlap}-{attention}-inference',
                 model=model, workload=workload, mapping=mapping, system=system, networks=dict(tp=0, pp=1, dp=1),
                 attention_type=attention, training=False)
        return c


rng = random.Random(274)
cases = [case(rng, forced_tp=tp, forced_overlap=ov, forced_pp=True) for tp in (2, 8) for ov in ('none', 'ring', 'pipe')]
cases += [case(rng, forced_tp=1, forced_pp=False), case(rng, forced_tp=1, forced_pp=True)]
cases += [case(rng) for _ in range(24)]
print_unique(cases)
