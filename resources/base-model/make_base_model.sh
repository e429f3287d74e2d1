#!/usr/bin/env bash
# Reproduces the base model that ships with Wafer Studio (resources/base-model/): the gpt-nano
# preset (byte tokenizer, about 0.8 M parameters) pretrained by this engine on the bundled corpus
# (resources/corpus), so fine-tuning works out of the box offline.
#
# Usage: make_base_model.sh [WAFER_BINARY] [STEPS]
#   WAFER_BINARY  default: build/app/wafer in the source tree
#   STEPS         default: 800 (800 x 16 x 128 = 1.6 M tokens, most of one pass over the
#                 corpus's 1.86 M training tokens)
# Writes model.safetensors, config.yaml, tokenizer.json and training.txt (the run's last lines)
# into this folder. A rerun reproduces the model up to floating-point differences between builds
# and machines; training.txt records the figures measured when the committed files were made.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
wafer=${1:-$src/build/app/wafer}
steps=${2:-800}
[[ -x $wafer ]] || { echo "make_base_model.sh: no wafer binary at $wafer (build first)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XDG_CACHE_HOME="$tmp/cache" XDG_DATA_HOME="$tmp/data"

log="$tmp/train.log"
"$wafer" train "$src/presets/gpt-nano.yaml" --db "$tmp/runs.sqlite" --name base-model \
    --set "runconfig.max_steps=$steps" --set runconfig.eval_frequency=250 \
    --set runconfig.eval_steps=20 --set "runconfig.model_dir=$tmp/run" 2>&1 | tee "$log"

cp "$tmp/run/model.safetensors" "$tmp/run/tokenizer.json" "$here/"
# The run's config names this machine's paths; the shipped copy points at the bundled corpus
# relative to itself and lets the run store choose the folder.
sed -e "s|$src/resources/corpus|../corpus|g" -e "s|$tmp/run||g" \
    "$tmp/run/config.yaml" >"$here/config.yaml"
{
    echo "Made by make_base_model.sh with $("$wafer" --version) on $(date -u +%Y-%m-%d)"
    echo "Steps: $steps; threads: $(nproc)"
    grep -E "unigram entropy|^step .*eval [0-9]|^finished|^stopped" "$log" || true
} >"$here/training.txt"
ls -l "$here"
