#!/usr/bin/env python3
"""Calculon's llm-optimal-execution and blueprint-search side by side on one
space, one core each:

  python3 tools/bench-search.py [MODEL PROCS MAX_BATCH SYSTEM]

MODEL / SYSTEM name files of test/oracles/calculon/{models,systems}
(default: megatron-126M 2 4 a100_nomem2, 506 configurations, about 10 s in
Calculon). Needs Calculon (calculon-ai/calculon @ caa4b11): the executable
CALCULON if set, else bin/calculon of the virtual environment CALCULON_VENV
(default target/venv, e.g. `pip install` of a Calculon checkout there), and a
release build (target/release/blueprint-search). Prints both rates:
Calculon's from its own log (its evaluation only), Blueprint's from the
report's totals (the search only, no process start or I/O).
"""
import json, os, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ORACLES = os.path.join(ROOT, 'test', 'oracles', 'calculon')
VENV = os.environ.get('CALCULON_VENV', os.path.join(ROOT, 'target', 'venv'))
CALCULON = os.environ.get('CALCULON', os.path.join(VENV, 'bin', 'calculon'))
SEARCH = os.path.join(ROOT, 'target', 'release', 'blueprint-search')


def main():
    model, procs, batch, system = (sys.argv[1:5] + ['megatron-126M', '2', '4', 'a100_nomem2'][len(sys.argv) - 1:])[:4]
    if not os.access(CALCULON, os.X_OK):
        sys.exit(f'bench-search: no Calculon at {CALCULON} (set CALCULON to its executable or CALCULON_VENV to its venv)')
    with tempfile.TemporaryDirectory() as tmp:
        run = subprocess.run([SEARCH, f'{ORACLES}/models/{model}.json', '--system', f'{ORACLES}/systems/{system}.json', '--procs', procs,
                              '--max-batch', batch, '--threads', '1', '--calculon-dp-overlap', '--top', '1', '--format', 'json'],
                             capture_output=True, text=True, check=True)
        ours = json.loads(run.stdout)
        calc = subprocess.run([CALCULON, 'llm-optimal-execution', f'models/{model}.json', procs, batch, 'float16',
                               f'systems/{system}.json', os.path.join(tmp, 'out.json'), '--no-tp-overlap', '-c', '1'],
                              cwd=ORACLES, capture_output=True, text=True, check=True)
        log = calc.stderr + calc.stdout
        rate = float(next(line.split()[-2] for line in log.splitlines() if 'Calculation rate' in line))
        best = float(next(line.split()[-1] for line in log.splitlines() if 'Best sample rate' in line))
    t = ours['totals']
    print(f'{model} on {procs} processors, batch {batch}, {system}: {t["configurations"]} configurations')
    print(f'Calculon        {rate:>12.1f} configurations a second (best sample rate {best})')
    print(f'blueprint-search {t["configurations_per_second"]:>11.1f} configurations a second (best sample rate '
          f'{ours["top"][0]["sample_rate"]}), {t["configurations_per_second"] / rate:.0f}x')


if __name__ == '__main__':
    main()
