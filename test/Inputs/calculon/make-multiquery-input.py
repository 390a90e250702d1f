"""Writes multiquery-cases.input.json: random valid training configurations with
Calculon's multi-query attention (attention_type = multiquery), for
record-estimate-cases.py. Deterministic (fixed seed):

    python3 make-multiquery-input.py > multiquery-cases.input.json
"""
import random

from cases_common import divisors, print_unique

MODELS = {  # Calculon's model files: (blocks, heads, hidden, ffn)
    'megatron-126M': (12, 16, 768, 3072), 'megatron-5B': (24, 32, 4096, 16384), 'gpt3-13B': (40, 40, 5140, 20560),
    'megatron-22B': (48, 64, 6144, 24576), 'gpt3-175B': (96, 96, 12288, 49152), 'palm-540B': (118, 48, 18432, 73728),
    'lamda': (64, 128, 8192, 65536), 'chinchilla': (80, 64, 8192, 32768),
}
SYSTEMS = ['a100_80e', 'a100_80g', 'h100_80g_nvl8', 'a100_80g_roofline']


def case(rng, forced_tp=None, forced_overlap=None):
    while True:
        model = rng.choice(list(MODELS))
        blocks, heads, hidden, ffn = MODELS[model]
        tp = forced_tp or rng.choice([1, 2, 4, 8])
        if heads % tp or hidden % tp or ffn % tp:
            continue
        pp = rng.choice([d for d in divisors(blocks) if d <= 8])
        v = rng.choice([d for d in divisors(blocks // pp) if d <= 4]) if pp > 1 else 1
        dp = rng.choice([1, 2, 4])
        mbs = rng.choice([1, 2])
        m = rng.choice([1, 2, 3, 4, 8])
        if v > 1:
            m = pp * rng.choice([1, 2])
        tp_comm = rng.choice(['ar', 'rs_ag', 'p2p_rs_ag'])
        recompute = rng.choice(['none', 'attn_only', 'full'])
        overlap = forced_overlap or (rng.choice(['none', 'none', 'ring', 'pipe']) if tp > 1 else 'none')
        if overlap != 'none' and tp == 1:
            continue
        redo = tp_comm == 'rs_ag' and recompute != 'full' and rng.random() < 0.5
        system = rng.choice(SYSTEMS)
        if model not in ('megatron-126M', 'megatron-5B'):
            system = 'a100_80e'  # memory is never the limit there
        mapping = dict(tp=tp, pp=pp, dp=dp, pipeline_interleaving=v, recompute=recompute, tp_comm=tp_comm,
                       seq_par_ag_redo=redo, fused_activation=rng.random() < 0.5,
                       optimizer_sharding=dp > 1 and rng.random() < 0.5, tp_overlap=overlap)
        datatype = rng.choice(['float16', 'float8']) if system == 'h100_80g_nvl8' else 'float16'
        workload = dict(global_batch=dp * mbs * m, microbatch=mbs, datatype=datatype)
        c = dict(name=f'{model}-t{tp}p{pp}d{dp}v{v}-mbs{mbs}-n{m}-{recompute}-{tp_comm}-{system}-{overlap}-mqa',
                 model=model, workload=workload, mapping=mapping, system=system, networks=dict(tp=0, pp=1, dp=1),
                 attention_type='multiquery')
        if dp > 1 and rng.random() < 0.3:
            c['overlap'] = dict(dp=True)
        return c


rng = random.Random(27)
cases = [case(rng, forced_tp=tp, forced_overlap=ov) for tp in (2, 4, 8) for ov in ('none', 'ring', 'pipe')]
cases += [case(rng, forced_tp=1)]
cases += [case(rng) for _ in range(26)]
print_unique(cases)
