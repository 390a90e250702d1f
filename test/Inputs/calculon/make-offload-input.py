"""Writes offload-cases.input.json: random valid configurations with Calculon's
weight, activation and optimizer offload to the second memory tier (a100_80g,
512 GiB; a100_80e), training and inference, for record-estimate-cases.py.
Deterministic (fixed seed):

    python3 make-offload-input.py > offload-cases.input.json
"""
import random

from cases_common import divisors, print_unique

MODELS = {  # Calculon's model files: (blocks, heads, hidden, ffn)
    'megatron-126M': (12, 16, 768, 3072), 'megatron-5B': (24, 32, 4096, 16384), 'gpt3-13B': (40, 40, 5140, 20560),
    'megatron-22B': (48, 64, 6144, 24576), 'gpt3-175B': (96, 96, 12288, 49152), 'megatron-40B': (48, 64, 8192, 32768),
}
SYSTEMS = ['a100_80g', 'a100_80e', 'a100_80g_roofline']


def case(rng, offload, training):
    while True:
        model = rng.choice(list(MODELS))
        blocks, heads, hidden, ffn = MODELS[model]
        tp = rng.choice([1, 2, 4, 8])
        if heads % tp or hidden % tp or ffn % tp:
            continue
        # Calculon offloads only with at least 3 blocks per processor.
        pp = rng.choice([d for d in divisors(blocks) if d <= 8 and blocks // d >= 3])
        v = rng.choice([d for d in divisors(blocks // pp) if d <= 4]) if pp > 1 else 1
        dp = rng.choice([1, 2, 4])
        mbs = rng.choice([1, 2])
        m = rng.choice([1, 2, 3, 4, 8])
        if v > 1:
            m = pp * rng.choice([1, 2])
        tp_comm = rng.choice(['ar', 'rs_ag', 'p2p_rs_ag'])
        recompute = rng.choice(['none', 'attn_only', 'full']) if training else 'none'
        overlap = rng.choice(['none', 'none', 'ring', 'pipe']) if tp > 1 else 'none'
        redo = training and tp_comm == 'rs_ag' and recompute != 'full' and rng.random() < 0.5
        system = rng.choice(SYSTEMS)
        if model not in ('megatron-126M', 'megatron-5B'):
            system = 'a100_80e'  # tier 1 is never the limit there
        mapping = dict(tp=tp, pp=pp, dp=dp, pipeline_interleaving=v, recompute=recompute, tp_comm=tp_comm,
                       seq_par_ag_redo=redo, fused_activation=rng.random() < 0.5,
                       optimizer_sharding=dp > 1 and rng.random() < 0.5, tp_overlap=overlap)
        workload = dict(global_batch=dp * mbs * m, microbatch=mbs, datatype='float16')
        flags = '-'.join(k for k in ('weight', 'activations', 'optimizer') if offload.get(k))
        c = dict(name=f'{model}-t{tp}p{pp}d{dp}v{v}-mbs{mbs}-n{m}-{recompute}-{tp_comm}-{system}-{overlap}-offload-{flags}'
                      + ('' if training else '-inference'),
                 model=model, workload=workload, mapping=mapping, system=system, networks=dict(tp=0, pp=1, dp=1),
                 offload=offload)
        if not training:
            c['training'] = False
        elif dp > 1 and rng.random() < 0.3:
            c['overlap'] = dict(dp=True)
        return c


rng = random.Random(271)
kinds = [dict(weight=True), dict(activations=True), dict(optimizer=True), dict(weight=True, activations=True),
         dict(weight=True, optimizer=True), dict(activations=True, optimizer=True),
         dict(weight=True, activations=True, optimizer=True)]
cases = [case(rng, kind, True) for kind in kinds for _ in range(3)]
cases += [case(rng, kind, False) for kind in kinds[:2] + kinds[3:4] for _ in range(2)]
print_unique(cases)
