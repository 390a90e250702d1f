"""Records a strategy-search case from Calculon's own `llm-optimal-execution`
(calculon-ai/calculon @ caa4b11, unmodified), in the format of
test/oracles/calculon/search-megatron-126M-8.json:

  python3 record-search-case.py MODEL PROCS MAX_BATCH SYSTEM TOP CPUS [tp-overlap] > search-MODEL-PROCS.json

MODEL is a file of test/oracles/calculon/models (without .json), SYSTEM one of
test/oracles/calculon/systems. The command run is
  calculon llm-optimal-execution models/MODEL.json PROCS MAX_BATCH float16 systems/SYSTEM.json out.json
      -t TOP --no-tp-overlap -c CPUS
(without --no-tp-overlap when the last argument is `tp-overlap`) with the executable CALCULON, else
bin/calculon of the venv CALCULON_VENV (default target/venv); its wall time is recorded. On a
system with a second memory tier (a100_80g) Calculon also explores offload, as
Blueprint's search does; the recorded executions carry the offload flags.
"""
import json, os, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, '..', '..', '..')
ORACLES = os.path.join(ROOT, 'test', 'oracles', 'calculon')
VENV = os.environ.get('CALCULON_VENV', os.path.join(ROOT, 'target', 'venv'))
CALCULON = os.environ.get('CALCULON', os.path.join(VENV, 'bin', 'calculon'))
PER = ["weight_space", "act_space", "act_checkpoint_size", "act_grad_space", "weight_grad_space", "optimizer_space",
       "proc_mem_tier1_cap_req"]


def main():
    model, procs, batch, system, top, cpus = sys.argv[1:7]
    tp_overlap = sys.argv[7:] == ['tp-overlap']
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, 'out.json')
        command = ['llm-optimal-execution', f'models/{model}.json', procs, batch, 'float16', f'systems/{system}.json',
                   'out.json', '-t', top, *([] if tp_overlap else ['--no-tp-overlap']), '-c', cpus]
        start = time.time()
        run = subprocess.run([CALCULON, *command[:6], out, *command[7:]], cwd=ORACLES, capture_output=True, text=True)
        wall = time.time() - start
        if run.returncode != 0:
            sys.exit(run.stderr)
        total = next(int(line.split()[-1]) for line in run.stderr.splitlines() + run.stdout.splitlines()
                     if 'Total executions' in line)
        good = next(int(line.split()[-1]) for line in run.stderr.splitlines() + run.stdout.splitlines()
                    if 'Good executions' in line)
        result = json.load(open(out))
    case = {
        "source": "Calculon (calculon-ai/calculon @ caa4b11) llm-optimal-execution, recorded by record-search-case.py",
        "command": 'calculon ' + ' '.join(command),
        "calculon_run": f"{wall:.1f} s wall with -c {cpus} ({total} configurations, {total / wall:.1f} a second)",
        "configurations_evaluated": total,
        "good_configurations": good,
        "model": model, "procs": int(procs), "max_batch": int(batch), "datatype": "float16", "system": system,
        "top": [{"execution": r["execution"], "sample_rate": r["stats"]["sample_rate"],
                 "total_time": r["stats"]["total_time"],
                 "per_processor": {k: r["stats"][k] for k in PER}} for r in (result[k] for k in sorted(result, key=int))],
    }
    json.dump(case, sys.stdout, indent=1)
    print()


if __name__ == '__main__':
    main()
