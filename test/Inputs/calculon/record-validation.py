#!/usr/bin/env python3
"""Records the statistics Calculon's llm-validation reads, at full precision.

Run with Calculon (calculon-ai/calculon @ caa4b11, unmodified) importable:

    PYTHONPATH=/work/calculon-src /work/calc-venv/bin/python \
      record-validation.py ../../oracles/calculon > validation-stats.json

For every configuration of Calculon's calculon/llm/validation.py (Figure 1
and Figure 7 on a100_80e, Table 5 on a100_80g), it does what
validation.py does -- Llm.Application of models/<model>.json,
Llm.Execution.from_json of validation/seqsel/<figure>/<model>_<mode>.json,
compile, run, get_stats_json(False) -- and writes the statistics
validation.py uses, as Python's json module writes them (shortest
round-trip floats). Nothing is computed here.
"""
import json
import logging
import os
import sys

import calculon
from calculon.llm import Llm
from calculon.system import System

MODELS = ['megatron-22B', 'gpt3-175B', 'turing-530B', 'megatron-1T']
FIGURES = [('fig1', 'a100_80e', ['none', 'seqsel']),
           ('fig7', 'a100_80e', ['none', 'seq', 'sel', 'seqsel', 'full']),
           ('tab5', 'a100_80g', ['full', 'seqsel'])]
FIELDS = ['weight_space', 'weight_grad_space', 'optimizer_space', 'act_space',
          'act_checkpoint_size', 'total_time', 'proc_mem_tier1_cap_req']


def main(base):
    cases = []
    for figure, system, modes in FIGURES:
        syst = System(calculon.io.read_json_file(os.path.join(base, 'systems', f'{system}.json')))
        for model in MODELS:
            for mode in modes:
                app = Llm.Application(calculon.io.read_json_file(os.path.join(base, 'models', f'{model}.json')))
                exe = Llm.Execution.from_json(calculon.io.read_json_file(
                    os.path.join(base, 'validation', 'seqsel', figure, f'{model}_{mode}.json')))
                mt = Llm(app, logging.getLogger('record'))
                mt.compile(syst, exe)
                mt.run(syst)
                stats = mt.get_stats_json(False)
                cases.append({'figure': figure, 'system': system, 'model': model, 'mode': mode,
                              'stats': {f: stats[f] for f in FIELDS}})
    json.dump({'source': 'Calculon (calculon-ai/calculon @ caa4b11, unmodified): the statistics its llm-validation reads, per configuration (record-validation.py)',
               'cases': cases}, sys.stdout, indent=1)
    print()


if __name__ == '__main__':
    main(sys.argv[1])
