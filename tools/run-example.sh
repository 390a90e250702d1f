#!/usr/bin/env bash
# The main job on an example: set up, build, then
#  1. take a GPT-3 175B training spec (Table 5 of Korthikanti et al., TP 8,
#     PP 8, interleaved, sequence parallel + selective recompute) through
#     ModelIR -> DistributedTaskIR -> PortablePlanIR with every check and
#     print the plan's work summary (Calculon's field names);
#  2. estimate that plan on an A100 system file (closed form and simulated
#     schedule, memory per stage against 80 GiB), draw its timeline and
#     memory as SVG and write the simulated step as a Perfetto trace;
#  3. answer "what is the fastest way to train megatron-126M on 8 of these
#     processors, and does it fit?" with the strategy search.
# Usage: tools/run-example.sh [SPEC.json]   (outputs in target/example/)
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
cargo build --quiet --release --bins
bin=target/release
out=target/example
mkdir -p "$out"
spec=${1:-test/Examples/gpt3-175B-seqsel.spec.json}
oracles=test/oracles/calculon
systems=$oracles/systems

echo "== 1. plan and work summary of $spec" >&2
"$bin/blueprint-translate" --import-transformer-training "$spec" \
  | "$bin/blueprint-opt" --pass-pipeline='builtin.module(distribute-transformer-training, plan-transformer-training, check-mesh-strategy, check-collective-groups, check-conservation, check-pipeline, check-recompute)' \
      -o "$out/plan.mlir"
"$bin/blueprint-translate" --export-work-summary "$out/plan.mlir"

echo "== 2. estimate on $systems/a100_80g.json (TP on tier 0, PP and DP on tier 1)" >&2
"$bin/blueprint-translate" --estimate "$out/plan.mlir" --system "$systems/a100_80g.json" \
  --tp-net 0 --pp-net 1 --dp-net 1 --timeline "$out/timeline.svg" --memory "$out/memory.svg" --trace "$out/trace.json"
echo "   pictures: $out/timeline.svg, $out/memory.svg (tools/screenshot.sh renders them); $out/trace.json opens in Perfetto" >&2

echo "== 3. the fastest way to train megatron-126M on 8 A100s (batch up to 8)" >&2
"$bin/blueprint-search" "$oracles/models/megatron-126M.json" \
  --system "$systems/a100_nomem2.json" --procs 8 --max-batch 8 --top 3 \
  -o "$out/search.json" --emit-plan "$out/best.mlir"
echo "   report: $out/search.json; best plan: $out/best.mlir" >&2

echo "== 4. a derived training step runs: 2 stages x 2 tensor- x 2 data-parallel ranks (8 in-process ranks)" >&2
step_spec=test/Execution/Inputs/gpt-4blocks-adam-pp2-tp2-dp2.json
python3 test/Execution/Inputs/st.py "$step_spec" "$out/params.safetensors" "$out/inputs.safetensors"
"$bin/blueprint-translate" --import-transformer-training "$step_spec" \
  | "$bin/blueprint-opt" --model-decompose-transformer --distribute-transformer-training -o "$out/step.mlir"
"$bin/blueprint-run" "$out/step.mlir" --train-step --params "$out/params.safetensors" --inputs "$out/inputs.safetensors" \
  -o "$out/step-out.safetensors" --comm-report | grep '^comm-report total'
echo "   outputs: $out/step-out.safetensors (gradients, updated parameters, Adam state); under mpirun -np 8 each process is one rank" >&2
