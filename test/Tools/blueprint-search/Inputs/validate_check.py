#!/usr/bin/env python3
"""Checks blueprint-search --validate --format json against Calculon.

Usage: validate_check.py BLUEPRINT.json CALCULON-STATS.json MEASUREMENTS.json

Every configuration's statistics must equal Calculon's (recorded by
test/Inputs/calculon/record-validation.py) exactly, every measured number
must be the paper's as Calculon's validation.py has it, and each row's
estimate and error must follow from them as Calculon computes them.
"""
import json
import sys

GIB = 1024 ** 3


def main(blueprint_path, calculon_path, measured_path):
    rows = json.load(open(blueprint_path))['rows']
    calculon = {(c['figure'], c['model'], c['mode']): c['stats'] for c in json.load(open(calculon_path))['cases']}
    measured = json.load(open(measured_path))
    seen = set()
    for r in rows:
        key = (r['figure'], r['model'], r['mode'])
        seen.add(key)
        want = calculon.get(key)
        if want is None:
            sys.exit(f'{key}: no Calculon case')
        for field, value in want.items():
            if float(r['stats'][field]) != float(value):
                sys.exit(f'{key} {field}: Blueprint {r["stats"][field]!r}, Calculon {value!r}')
        s = r['stats']
        if r['quantity'] == 'par_opt_gib':
            m = measured['fig1']['measured_gib'][r['model']][r['mode']]['par_opt']
            a = (s['weight_space'] + s['weight_grad_space'] + s['optimizer_space']) / GIB
        elif r['quantity'] == 'act_gib':
            m = measured['fig1']['measured_gib'][r['model']][r['mode']]['act']
            a = s['act_space'] / GIB
        elif r['quantity'] == 'act_percent':
            m = measured['fig7']['measured_percent'][r['model']][r['mode']]
            none = calculon[('fig7', r['model'], 'none')]
            a = (s['act_space'] + s['act_checkpoint_size']) / (none['act_space'] + none['act_checkpoint_size']) * 100
        else:
            m = measured['tab5']['measured_seconds'][r['model']][r['mode']]
            a = s['total_time']
        if r['measured'] != m or r['estimated'] != a or r['error_percent'] != 100 * (1 - a / m):
            sys.exit(f'{key} {r["quantity"]}: {r["measured"]}, {r["estimated"]}, {r["error_percent"]} is not {m}, {a}, {100 * (1 - a / m)}')
    if seen != set(calculon):
        sys.exit(f'missing configurations: {sorted(set(calculon) - seen)}')
    print(f'{len(seen)} configurations, {len(rows)} figures: every statistic equal to Calculon\'s, errors as Calculon computes them')


if __name__ == '__main__':
    main(*sys.argv[1:])
