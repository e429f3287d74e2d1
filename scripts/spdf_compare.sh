#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# SPDF at laptop scale (README "Dynamic sparsity and SPDF"): dense pre-training, 75% sparse
# pre-training, and the sparse model fine-tuned dense, each with its final eval loss beside its
# emulated FLOPs (zero weights skipped) and emulated wafer time. Prints a Markdown table.
# Usage: scripts/spdf_compare.sh [WAFER_BINARY] [OUT_DIR] [FINETUNE_STEPS]
#   WAFER_BINARY   default: build/app/wafer
#   OUT_DIR        default: a new temporary folder (run folders and the run store go there)
#   FINETUNE_STEPS default: 100 (a quarter of the pre-training's 400)
# Extra settings for every run: SPDF_SET="--set runconfig.max_steps=40" scripts/spdf_compare.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
wafer=${1:-$root/build/app/wafer}
out=${2:-$(mktemp -d /tmp/spdf.XXXXXX)}
ft_steps=${3:-100}
mkdir -p "$out"
db="$out/runs.sqlite"
preset="$root/presets/spdf-pretrain.yaml"
read -r -a extra <<< "${SPDF_SET:-}"

summary() {  # the summary line of a --json run
  grep '"event":"summary"' "$1" | tail -1
}

"$wafer" train "$preset" --db "$db" --json --name "spdf dense" \
  --set sparsity.sparsity=0 --set "runconfig.model_dir=$out/dense" "${extra[@]}" > "$out/dense.jsonl"
"$wafer" train "$preset" --db "$db" --json --name "spdf sparse" \
  --set "runconfig.model_dir=$out/sparse" "${extra[@]}" > "$out/sparse.jsonl"
"$wafer" finetune --base "$out/sparse" --data "$root/resources/corpus" --db "$db" --json \
  --name "spdf sparse+dense" --max-steps "$ft_steps" \
  --set "runconfig.model_dir=$out/spdf" "${extra[@]}" > "$out/spdf.jsonl"

python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
def load(name):
    for line in reversed(open(f"{out}/{name}.jsonl").read().splitlines()):
        if '"event":"summary"' in line.replace(" ", ""):
            return json.loads(line)
    raise SystemExit(f"{name}: no summary line")
dense, sparse, spdf = load("dense"), load("sparse"), load("spdf")
rows = [("dense pre-training", [dense]),
        ("75% sparse pre-training", [sparse]),
        ("75% sparse pre-training + dense fine-tuning", [sparse, spdf])]
print("| run | steps | final eval loss | emulated training FLOPs | emulated wafer time |")
print("|---|---:|---:|---:|---:|")
for name, parts in rows:
    steps = "+".join(str(p["steps"]) for p in parts)
    flops = sum(p["emulated_flops"] for p in parts)
    secs = sum(p["emulated_s"] for p in parts)
    rel = flops / dense["emulated_flops"]
    print(f"| {name} | {steps} | {parts[-1]['final_eval_loss']:.4f} | {flops:.3e} ({rel:.2f}x) "
          f"| {secs * 1e3:.1f} ms ({secs / dense['emulated_s']:.2f}x) |")
PY
echo "runs and logs: $out"
