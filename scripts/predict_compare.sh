#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# predict_compare.sh: the emulator's predictions of two builds of `wafer`, byte for byte, e.g.
# before and after a refactoring of the cycle model (which must not move a single digit):
#
#   scripts/predict_compare.sh /work/ref/69f07ee/bin/wafer build/app/wafer
#
# Give each binary where it was built or installed: `wafer` finds its wafer specs
# (presets/wafers) relative to itself, so a copy elsewhere fails every case.
# Runs each case below with both binaries (`wafer predict --json` over the presets: the default
# gpt-nano, Cerebras-GPT 111M and 1.3B on several systems, MoE, sparsity, VSL/packed sequences,
# micro-batches, one weight slot, LoRA, activation recompute and offload; the text output of a
# few; `validate-emulator --json`, which predicts every Cerebras-GPT size on 1..16 systems with
# the activation planner; `validate --json` of a LoRA config, which prints its emulated step)
# and prints one line per case: "same" or "DIFFERS" with the diff. `wafer sweep` prints no
# predictions, so it has no case. Exits 1 when any case differs (or fails in one binary only).
set -euo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: $0 OLD_WAFER NEW_WAFER" >&2
  exit 2
fi
old=$1
new=$2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
p=$root/presets
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Neither binary touches the user's data, cache or settings.
export XDG_DATA_HOME=$work/data XDG_CACHE_HOME=$work/cache XDG_CONFIG_HOME=$work/config

cases=(
  "predict $p/gpt-nano.yaml --json"
  "predict $p/gpt-nano.yaml --wafer teaching-16x16 --sweep-systems 1,2,4 --json"
  "predict $p/gpt-nano.yaml --num-csx 4 --json"
  "predict $p/gpt-nano.yaml --set train_input.micro_batch_size=4 --json"
  "predict $p/gpt-nano.yaml --set wafer.weight_buffer_layers=1 --num-csx 2 --json"
  "predict $p/gpt-nano.yaml --sparsity 0.75 --json"
  "predict $p/gpt-nano.yaml --set lora.rank=8 --set lora.targets=[c_attn,c_fc,mlp.c_proj] --json"
  "predict $p/cerebras-gpt-111m.yaml --json"
  "predict $p/cerebras-gpt-111m.yaml --sweep-systems 1,2,4,8,16 --weak-scaling --json"
  "predict $p/cerebras-gpt-1.3b.yaml --num-csx 4 --json"
  "predict $p/cerebras-gpt-1.3b.yaml --wafer wse3 --sweep-systems 1,4 --json"
  "predict $p/cerebras-gpt-13b.yaml --wafer wse3 --json"
  "predict $p/gpt-nano-moe.yaml --json"
  "predict $p/gpt-nano-moe.yaml --num-csx 4 --set train_input.micro_batch_size=2 --json"
  "predict $p/gpt-nano.yaml --set model.moe.num_experts=8 --set model.moe.top_k=2 --wafer wse2 --json"
  "predict $p/teaching-sparsity.yaml --json"
  "predict $p/spdf-pretrain.yaml --json"
  "predict $p/gpt-nano-vsl.yaml --json"
  "predict $p/teaching-stream.yaml --json"
  "predict $p/llama-70b-class.yaml --wafer wse3 --json"
  "predict $p/llama-70b-class.yaml --wafer wse3 --set train_input.micro_batch_size=4 --json"
  "predict $p/gpt-nano.yaml --wafer teaching-16x16"
  "predict $p/gpt-nano-moe.yaml --sweep-systems 1,2,4"
  "predict $p/llama-70b-class.yaml --wafer wse3"
  "validate-emulator --json"
  "validate $p/gpt-nano.yaml --set lora.rank=4 --json"
)

differ=0
for c in "${cases[@]}"; do
  # shellcheck disable=SC2086  # each case is a word list
  "$old" $c >"$work/old" 2>&1 && old_rc=0 || old_rc=$?
  # shellcheck disable=SC2086
  "$new" $c >"$work/new" 2>&1 && new_rc=0 || new_rc=$?
  shown=${c//$root\//}
  if [[ $old_rc -eq $new_rc ]] && cmp -s "$work/old" "$work/new"; then
    printf 'same     (exit %d, %5d bytes)  wafer %s\n' "$old_rc" "$(wc -c <"$work/old")" "$shown"
  else
    differ=$((differ + 1))
    printf 'DIFFERS  (exit %d vs %d)  wafer %s\n' "$old_rc" "$new_rc" "$shown"
    diff "$work/old" "$work/new" | head -20 || true
  fi
done
echo "${#cases[@]} cases, $differ differ"
[[ $differ -eq 0 ]]
