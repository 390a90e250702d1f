#!/usr/bin/env bash
# The main job on an example: set up, build, then take a GPT-3 175B training
# spec (Table 5 of Korthikanti et al., sequence parallel + selective
# recompute) through ModelIR -> DistributedTaskIR -> PortablePlanIR with
# every check, and print the plan's work summary (Calculon's field names).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
cargo build --quiet --bins
bin=target/debug
spec=${1:-test/Examples/gpt3-175B-seqsel.spec.json}
"$bin/blueprint-translate" --import-transformer-training "$spec" \
  | "$bin/blueprint-opt" --pass-pipeline='builtin.module(distribute-transformer-training, plan-transformer-training, check-mesh-strategy, check-collective-groups, check-conservation, check-recompute)' \
  | "$bin/blueprint-translate" --export-work-summary
