"""Records Calculon (calculon-ai/calculon @ caa4b11, unmodified) step times for the
estimate tests: python3 record-estimate-cases.py estimate-cases.input.json > estimate-cases.json

Run with Calculon's dependencies and source on the path, e.g.
PYTHONPATH=/work/calculon-src /work/calculon-venv/bin/python record-estimate-cases.py ...

Each input case: name, model (a Calculon model file in test/oracles/calculon/models),
workload, mapping (Blueprint's names, `tp_overlap` included), system (a file in test/oracles/calculon/systems,
or in ./systems), networks {tp, pp, dp}, optional overlap {dp: bool}, optional attention_type
('multihead' when absent; 'multiquery' also writes model.kv_heads = 1, Blueprint's spelling) and
optional training (true when absent) and optional offload {weight, activations, optimizer: bool}
(Calculon's *_offload; the output's per_processor then adds proc_mem_tier2_cap_req). Output: the format of
test/oracles/calculon/fullmodel-random.json plus `sample_rate`, and, under DP overlap,
`dp_overlap_fixed`: Calculon's own step composition re-run after replacing its defective
block_re_flops_time / block_re_mem_time (running prefix sums) by the sums of the recomputed
layers' own forward flop / memory times.
"""
import json, logging, os, sys
from calculon.llm import Llm
from calculon.system import System

HERE = os.path.dirname(os.path.abspath(__file__))
ORACLES = os.path.join(HERE, '..', '..', 'oracles', 'calculon')
BLOCK = ["block_fw_flops", "block_agrad_flops", "block_wgrad_flops", "block_optim_flops", "block_fw_mem_accessed",
         "block_agrad_mem_accessed", "block_wgrad_mem_accessed", "block_optim_mem_accessed", "baseblock_fw_tp_size",
         "baseblock_bw_tp_size", "baseblock_recomm_size", "block_fw_pp_size", "block_bw_pp_size", "block_dp_size",
         "block_weight_space", "block_act_working_space", "block_act_storage_space", "block_act_checkpoint_size",
         "block_weight_grad_space", "block_weight_grad_space_no_sharding", "block_act_grad_space", "block_optimizer_space"]
PER = ["weight_space", "act_space", "act_checkpoint_size", "act_grad_space", "weight_grad_space", "optimizer_space",
       "proc_mem_tier1_cap_req"]
TIME = ["fw_time", "bw_time", "optim_step_time", "recompute_time", "recomm_exposed_time", "bubble_time",
        "tp_comm_exposed_time", "pp_comm_exposed_time", "dp_comm_exposed_time", "total_time"]


def system_file(name):
    local = os.path.join(HERE, 'systems', name + '.json')
    return local if os.path.exists(local) else os.path.join(ORACLES, 'systems', name + '.json')


def run(case):
    cm = json.load(open(os.path.join(ORACLES, 'models', case['model'] + '.json')))
    mp, wl, nets = case['mapping'], case['workload'], case['networks']
    dp_overlap = case.get('overlap', {}).get('dp', False)
    offload = case.get('offload', {})
    attention = case.get('attention_type', 'multihead')
    training = case.get('training', True)
    exe = dict(num_procs=mp['tp'] * mp['pp'] * mp['dp'], tensor_par=mp['tp'], pipeline_par=mp['pp'], data_par=mp['dp'],
               tensor_par_net=nets['tp'], pipeline_par_net=nets['pp'], data_par_net=nets['dp'],
               batch_size=wl['global_batch'], microbatch_size=wl['microbatch'], datatype=wl['datatype'],
               fused_activation=mp['fused_activation'], attention_type=attention, activation_recompute=mp['recompute'],
               pipeline_interleaving=mp['pipeline_interleaving'], optimizer_sharding=mp['optimizer_sharding'],
               tensor_par_comm_type=mp['tp_comm'], tensor_par_overlap=mp.get('tp_overlap', 'none'), seq_par_ag_redo=mp['seq_par_ag_redo'],
               data_par_overlap=dp_overlap, weight_offload=offload.get('weight', False),
               activations_offload=offload.get('activations', False), optimizer_offload=offload.get('optimizer', False),
               training=training)
    syst = System(json.load(open(system_file(case['system']))))
    m = Llm(Llm.Application(cm), logging.getLogger('calculon'))
    m.compile(syst, Llm.Execution.from_json(exe))
    m.run(syst)
    s = m.get_stats_json(False)
    model = dict(name=case['model'], hidden=cm['hidden'], ffn_hidden=cm['feedforward'], seq_len=cm['seq_size'],
                 heads=cm['attn_heads'], head_dim=cm['attn_size'], blocks=cm['num_blocks'])
    if attention == 'multiquery':
        # Blueprint's spec says multi-query attention as one KV head.
        model['kv_heads'] = 1
    out = dict(name=case['name'], model=model, workload=wl, mapping=mp, system=case['system'], networks=nets)
    if attention != 'multihead':
        out['attention_type'] = attention
    if not training:
        out['training'] = False
    if offload:
        out['offload'] = offload
    if 'overlap' in case:
        out['overlap'] = case['overlap']
    # Integral floats as integers, as in the oracle files (test/oracles/calculon).
    out['block'] = {k: (int(s[k]) if isinstance(s[k], float) and s[k].is_integer() else s[k]) for k in BLOCK}
    out['per_processor'] = {k: s[k] for k in PER}
    if offload:
        out['per_processor']['proc_mem_tier2_cap_req'] = s['proc_mem_tier2_cap_req']
    out['timing_seconds'] = {k: s[k] for k in TIME}
    out['sample_rate'] = s['sample_rate']
    if dp_overlap:
        layers = [l for l in m._llm_block if l.get_recompute_flag()]
        re_flops, re_mem = 0, 0
        for layer in layers:
            re_flops += layer.compute_flops_time('fw')
            re_mem += layer.compute_mem_time('fw')
        out['calculon_block_re_flops_time'] = m._block_re_flops_time
        m._block_re_flops_time, m._block_re_mem_time = re_flops, re_mem
        m._compute_batch_stats()
        out['dp_overlap_fixed'] = dict(block_re_flops_time=re_flops, dp_comm_exposed_time=m.get_dp_comm_exposed_time(),
                                       total_time=m.get_total_time())
    return out


if __name__ == '__main__':
    cases = json.load(open(sys.argv[1]))
    doc = dict(source='Calculon (calculon-ai/calculon @ caa4b11), run in-process by record-estimate-cases.py',
               cases=[run(c) for c in cases])
    print(json.dumps(doc, indent=1))
