#!/usr/bin/env python3
"""Checks blueprint-search --all listings.

  all_check.py calculon LISTING.csv CALCULON.csv.gz
      Every row of Calculon's llm-all-executions is a row of the listing
      (the same space); every listed estimate equals Calculon's to the last
      bit (sample rate, ten times, memory per processor, both tiers); the
      configurations the listing has no estimate for, if any, are counted
      by reason.
  all_check.py report LISTING.csv REPORT.json
      One line per configuration, indices 0..N-1 in order; fit and pruned
      counts equal the report's totals; the listing's best K (sample rate
      descending, then index) are the report's top K.
  all_check.py same LISTING.csv LISTING.jsonl
      The CSV and the JSON lines hold the same values.
"""
import csv
import gzip
import json
import sys

STRATEGY = ['tp', 'pp', 'dp', 'tp_net', 'pp_net', 'dp_net', 'global_batch', 'microbatch',
            'fused_activation', 'recompute', 'pipeline_interleaving', 'optimizer_sharding',
            'tp_comm', 'tp_overlap', 'seq_par_ag_redo', 'dp_overlap', 'weight_offload',
            'activations_offload', 'optimizer_offload']
CALCULON = ['tensor_par', 'pipeline_par', 'data_par', 'tensor_par_net', 'pipeline_par_net',
            'data_par_net', 'batch_size', 'microbatch_size', 'fused_activation',
            'activation_recompute', 'pipeline_interleaving', 'optimizer_sharding',
            'tensor_par_comm_type', 'tensor_par_overlap', 'seq_par_ag_redo', 'data_par_overlap',
            'weight_offload', 'activations_offload', 'optimizer_offload']
STATS = ['sample_rate', 'fw_time', 'bw_time', 'optim_step_time', 'recompute_time',
         'recomm_exposed_time', 'bubble_time', 'tp_comm_exposed_time', 'pp_comm_exposed_time',
         'dp_comm_exposed_time', 'total_time', 'weight_space', 'act_space', 'act_checkpoint_size',
         'act_grad_space', 'weight_grad_space', 'optimizer_space', 'proc_mem_tier1_cap_req',
         'proc_mem_tier2_cap_req']


def listing(path):
    with open(path, newline='') as f:
        return list(csv.DictReader(f))


def norm(value):
    return value.lower()


def calculon(listing_path, calculon_path):
    rows = listing(listing_path)
    ours = {tuple(norm(r[k]) for k in STRATEGY): r for r in rows}
    if len(ours) != len(rows):
        sys.exit('the listing repeats a configuration')
    with gzip.open(calculon_path, 'rt', newline='') as f:
        theirs = list(csv.DictReader(f))
    compared = 0
    unestimated = {}
    for c in theirs:
        key = tuple(norm(c[k]) for k in CALCULON)
        r = ours.pop(key, None)
        if r is None:
            sys.exit(f'Calculon evaluates {key}, the listing does not have it')
        if r['fits'] == '':
            unestimated[r['pruned']] = unestimated.get(r['pruned'], 0) + 1
            continue
        for field in STATS:
            if float(r[field]) != float(c[field]):
                sys.exit(f'index {r["index"]} {field}: Blueprint {r[field]}, Calculon {c[field]}')
        compared += 1
    if ours:
        sys.exit(f'{len(ours)} listed configurations Calculon does not evaluate, e.g. index {next(iter(ours.values()))["index"]}')
    print(f'calculon: {len(theirs)} configurations, the same space; {compared} estimates equal to Calculon\'s in all {len(STATS)} '
          f'figures; without an estimate: {", ".join(f"{k} {v}" for k, v in sorted(unestimated.items()))}')


def report(listing_path, report_path):
    rows = listing(listing_path)
    rep = json.load(open(report_path))
    totals = rep['totals']
    if [int(r['index']) for r in rows] != list(range(totals['configurations'])):
        sys.exit('the indices are not 0..N-1 in order')
    fit = [r for r in rows if r['fits'] == 'true' and r['pruned'] == '']
    if len(fit) != totals['fit']:
        sys.exit(f'{len(fit)} rows fit, the report says {totals["fit"]}')
    pruned = {}
    for r in rows:
        if r['pruned']:
            pruned[r['pruned']] = pruned.get(r['pruned'], 0) + 1
    if pruned != {k: v['count'] for k, v in totals['pruned'].items()}:
        sys.exit(f'pruned {pruned}, the report says {totals["pruned"]}')
    best = sorted(fit, key=lambda r: (-float(r['sample_rate']), int(r['index'])))[:len(rep['top'])]
    for r, e in zip(best, rep['top']):
        if int(r['index']) != e['index'] or float(r['sample_rate']) != e['sample_rate'] or float(r['total_time']) != e['total_time']:
            sys.exit(f'listing best {r["index"]} {r["sample_rate"]}, report {e["index"]} {e["sample_rate"]}')
    print(f'report: {len(rows)} lines in order; {len(fit)} fit, pruned {sum(pruned.values())} by the same reasons; '
          f'the best {len(best)} are the report\'s top')


def same(csv_path, jsonl_path):
    rows = listing(csv_path)
    lines = [json.loads(line) for line in open(jsonl_path)]
    if len(rows) != len(lines):
        sys.exit(f'{len(rows)} CSV rows, {len(lines)} JSON lines')
    for r, j in zip(rows, lines):
        if list(r) != list(j):
            sys.exit('the keys differ from the columns')
        for k, v in r.items():
            w = j[k]
            if w is None:
                ok = v == ''
            elif isinstance(w, bool):
                ok = v == ('true' if w else 'false')
            elif isinstance(w, (int, float)):
                ok = float(v) == w
            else:
                ok = v == w
            if not ok:
                sys.exit(f'index {r["index"]} {k}: CSV {v!r}, JSON {w!r}')
    print(f'same: {len(rows)} configurations, every value equal')


if __name__ == '__main__':
    {'calculon': calculon, 'report': report, 'same': same}[sys.argv[1]](*sys.argv[2:])
