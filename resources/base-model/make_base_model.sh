#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Reproduces the base model that ships with Wafer Studio (resources/base-model/): the llama-base
# preset (6 x 256 Llama blocks: rotary, RMSNorm, SwiGLU, 4 heads sharing 2 KV heads; a 2048-token
# BPE learned from the corpus, bf16 compute, about 5.2 M parameters) pretrained by this engine on
# the bundled corpus (resources/corpus), so fine-tuning works out of the box offline. Between 6
# minutes (2 idle cores) and 30 (2 cores shared with builds).
#
# Usage: make_base_model.sh [WAFER_BINARY] [STEPS] [THREADS] [PRESET]
#   WAFER_BINARY  default: build/app/wafer in the source tree
#   STEPS         default: 1300 (1300 x 16 x 128 = 2.7 M tokens, about 5 passes over the
#                 corpus's 0.52 M training tokens)
#   THREADS       default: 2 (the machine the committed model was made on)
#   PRESET        default: presets/llama-base.yaml; presets/gpt-base.yaml is the GPT-2-block base
#                 it replaced, on the same budget (README "The shipped base model")
# Writes model.safetensors, config.yaml, vocab.json, merges.txt and training.txt (the run's last
# lines, with the machine's load) into this folder. A rerun reproduces the model up to
# floating-point differences between builds and machines (the BPE vocabulary exactly);
# training.txt records the figures measured when the committed files were made.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
wafer=${1:-$src/build/app/wafer}
steps=${2:-1300}
threads=${3:-2}
preset=${4:-$src/presets/llama-base.yaml}
[[ -x $wafer ]] || { echo "make_base_model.sh: no wafer binary at $wafer (build first)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XDG_CACHE_HOME="$tmp/cache" XDG_DATA_HOME="$tmp/data"

log="$tmp/train.log"
load_before=$(uptime)
"$wafer" train "$preset" --db "$tmp/runs.sqlite" --name base-model \
    --threads "$threads" --set "runconfig.max_steps=$steps" \
    --set "runconfig.model_dir=$tmp/run" 2>&1 | tee "$log"
load_after=$(uptime)

rm -f "$here/tokenizer.json"  # the byte tokenizer's file (the base before gpt-base)
cp "$tmp/run/model.safetensors" "$tmp/run/vocab.json" "$tmp/run/merges.txt" "$here/"
# The run's config names this machine's paths; the shipped copy points at the bundled corpus
# relative to itself and lets the run store choose the folder.
sed -e "s|$src/resources/corpus|../corpus|g" -e "s|$tmp/run||g" \
    "$tmp/run/config.yaml" >"$here/config.yaml"
{
    echo "Made by make_base_model.sh with $("$wafer" --version | head -1) on $(date -u +%Y-%m-%d)"
    echo "Preset: ${preset#"$src/"}; steps: $steps; threads: $threads; CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
    echo "Load before: $load_before"
    echo "Load after:  $load_after"
    grep -E "^corpus:|unigram entropy|^precision|^step .*eval [0-9]|^finished|^stopped" "$log" || true
} >"$here/training.txt"
ls -l "$here"
