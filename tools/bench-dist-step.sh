#!/usr/bin/env bash
# How convert-dist-step-to-linalg scales: the lowered step's size and the
# pass's time against distribute-transformer-training (the anchor) as the
# blocks and the microbatches grow (8 pipeline stages, float32, hidden 64).
# The step must grow with blocks + slots, not their product.
# Usage: tools/bench-dist-step.sh [BIN_DIR]   (default target/release, else target/debug)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-}
if [ -z "$bin" ]; then
  bin=target/release
  [ -x "$bin/blueprint-opt" ] || bin=target/debug
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
now() { date +%s.%N; }
printf '%6s %6s %12s %12s %8s %10s %6s\n' blocks micro distribute_s convert_s ratio step_lines calls
for cfg in "48 32" "96 32" "96 64" "96 128"; do
  set -- $cfg
  python3 test/Tools/blueprint-translate/Inputs/variant.py test/Execution/Inputs/gpt-2blocks-adam-pp2.json \
    model.blocks="$1" mapping.pp=8 workload.microbatch=1 workload.global_batch="$2" > "$work/spec.json"
  "$bin/blueprint-translate" --import-transformer-training "$work/spec.json" | "$bin/blueprint-opt" --model-decompose-transformer > "$work/model.mlir"
  s=$(now); "$bin/blueprint-opt" "$work/model.mlir" --distribute-transformer-training -o "$work/dist.mlir"
  m=$(now); "$bin/blueprint-opt" "$work/dist.mlir" --convert-dist-step-to-linalg -o "$work/step.mlir"
  e=$(now)
  python3 - "$1" "$2" "$s" "$m" "$e" "$(wc -l < "$work/step.mlir")" "$(grep -c 'call @' "$work/step.mlir")" <<'PY'
import sys
b, mb, s, m, e, lines, calls = sys.argv[1:]
d, c = float(m) - float(s), float(e) - float(m)
print(f"{b:>6} {mb:>6} {d:12.3f} {c:12.3f} {c / d:8.1f} {lines:>10} {calls:>6}")
PY
done
