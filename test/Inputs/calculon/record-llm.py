"""Writes Calculon execution files (the format of Calculon's examples/) for a
selection of recorded cases and runs Calculon's own command on each:

    calculon llm MODEL.json EXECUTION.json SYSTEM.json OUT.json

(calculon-ai/calculon @ caa4b11, unmodified; the full 96-field statistics).
Run from this folder with Calculon's source and dependencies:

    PYTHONPATH=/work/calculon-src /work/calc-venv/bin/python record-llm.py /work/calculon-src/bin/calculon

Executions go to executions/<case>.json, Calculon's outputs to
../../oracles/calculon/llm/<case>.json. Calculon's own example
(examples/3072_t4_p64_d12_mbs4_full.json, copied unchanged as
executions/3072_t4_p64_d12_mbs4_full.json) is run on megatron-1T / a100_80e.
"""
import json, os, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ORACLES = os.path.join(HERE, '..', '..', 'oracles', 'calculon')
# (file, how many of its cases): training, tiled, multi-query, inference, offload, uneven pipelines.
SELECTION = [
    (os.path.join(ORACLES, 'fullmodel-random.json'), 4),
    (os.path.join(HERE, 'estimate-cases.json'), 4),
    (os.path.join(HERE, 'tp-overlap-cases.json'), 2),
    (os.path.join(ORACLES, 'multiquery-cases.json'), 6),
    (os.path.join(ORACLES, 'inference-cases.json'), 8),
    (os.path.join(ORACLES, 'offload-cases.json'), 27),
    (os.path.join(ORACLES, 'uneven-cases.json'), 8),
]


def system_file(name):
    local = os.path.join(HERE, 'systems', name + '.json')
    return local if os.path.exists(local) else os.path.join(ORACLES, 'systems', name + '.json')


def execution(case):
    mp, wl, nets = case['mapping'], case['workload'], case.get('networks', {'tp': 0, 'pp': 1, 'dp': 1})
    return dict(num_procs=mp['tp'] * mp['pp'] * mp['dp'], tensor_par=mp['tp'], pipeline_par=mp['pp'], data_par=mp['dp'],
                tensor_par_net=nets['tp'], pipeline_par_net=nets['pp'], data_par_net=nets['dp'],
                batch_size=wl['global_batch'], microbatch_size=wl['microbatch'], datatype=wl['datatype'],
                fused_activation=mp['fused_activation'], attention_type=case.get('attention_type', 'multihead'),
                activation_recompute=mp['recompute'], pipeline_interleaving=mp['pipeline_interleaving'],
                optimizer_sharding=mp['optimizer_sharding'], tensor_par_comm_type=mp['tp_comm'],
                tensor_par_overlap=mp.get('tp_overlap', 'none'), seq_par_ag_redo=mp['seq_par_ag_redo'],
                data_par_overlap=case.get('overlap', {}).get('dp', False),
                weight_offload=case.get('offload', {}).get('weight', False),
                activations_offload=case.get('offload', {}).get('activations', False),
                optimizer_offload=case.get('offload', {}).get('optimizer', False), training=case.get('training', True))


def main(calculon):
    runs = []
    for path, count in SELECTION:
        for case in json.load(open(path))['cases'][:count]:
            exe = os.path.join(HERE, 'executions', case['name'] + '.json')
            with open(exe, 'w') as f:
                json.dump(execution(case), f, indent=1)
                f.write('\n')
            runs.append((case['name'], case['model']['name'], case['system']))
    runs.append(('3072_t4_p64_d12_mbs4_full', 'megatron-1T', 'a100_80e'))
    index = []
    for name, model, system in runs:
        out = os.path.join(ORACLES, 'llm', name + '.json')
        subprocess.run([sys.executable, calculon, 'llm', os.path.join(ORACLES, 'models', model + '.json'),
                        os.path.join(HERE, 'executions', name + '.json'), system_file(system), out], check=True)
        index.append(dict(name=name, model=model, system=system))
    with open(os.path.join(ORACLES, 'llm', 'index.json'), 'w') as f:
        json.dump(dict(source='calculon llm (calculon-ai/calculon @ caa4b11), run by test/Inputs/calculon/record-llm.py',
                       runs=index), f, indent=1)
        f.write('\n')


if __name__ == '__main__':
    main(sys.argv[1])
