#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Smoke test of wafer-studio --sweep under xvfb-run: a tiny μTransfer sweep (2 widths x 3 rates x
# sp/mup, 6 steps, on the bundled corpus) started by the real binary; when it ends the Sweeps tab
# is saved as a screenshot and the app quits 0. Every trial must be in the store, finished.
# Usage: studio_sweep_smoke.sh WAFER_STUDIO SOURCE_DIR ARTIFACT_DIR
set -euo pipefail
studio=$1 src=$2 artifacts=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$artifacts"
export XDG_DATA_HOME="$tmp/data" XDG_CACHE_HOME="$tmp/cache" XDG_CONFIG_HOME="$tmp/config"
unset QT_QPA_PLATFORM  # a real (virtual) X display, not offscreen
cat > "$tmp/tiny-sweep.yaml" <<YAML
model: {name: tiny-sweep, hidden_size: 16, num_hidden_layers: 1, num_heads: 2, filter_size: 32,
        vocab_size: 256, max_position_embeddings: 16}
optimizer: {learning_rate: 0.003, betas: [0.9, 0.95], max_gradient_norm: 1.0}
train_input: {data_dir: "$src/resources/corpus", batch_size: 2, max_sequence_length: 16}
eval_input: {batch_size: 2}
runconfig: {max_steps: 6, eval_frequency: 0, eval_steps: 0, log_steps: 1, seed: 3}
wafer: {emulate: false}
sweep:
  parallel_trials: 2
  final_loss_steps: 3
  parameters:
    model.hidden_size: {values: [16, 32]}
    optimizer.learning_rate: {log2_range: {min: -9, max: -7, step: 1}}
  parametrization: [sp, mup]
  parametrizations:
    sp: {}
    mup: {model.mup_base_hidden_size: 16, model.mup_base_filter_size: 32}
YAML
shot="$artifacts/studio-smoke-sweeps.png"
rm -f "$shot"
xvfb-run -a -s "-screen 0 1600x1000x24" "$studio" "$tmp/tiny-sweep.yaml" --sweep \
  --screenshot "$shot" --tab sweeps --db "$tmp/runs.sqlite"
test -s "$shot" || { echo "no screenshot written at $shot" >&2; exit 1; }
if command -v sqlite3 >/dev/null; then
  n=$(sqlite3 "$tmp/runs.sqlite" "select count(*) from runs where kind='sweep-trial' and status='finished'")
  [ "$n" = 12 ] || { echo "expected 12 finished trials in the store, found $n" >&2; exit 1; }
fi
echo "ok: $shot"
