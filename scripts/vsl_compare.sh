#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Variable sequence length: the two-stage schedule of presets/gpt-nano-vsl.yaml (80% of the steps
# at 128 tokens, then 512) against single-stage training at 512, same model, data, seed and
# tokens. Prints each run's final eval loss, wall time and emulated wafer time.
# Usage: scripts/vsl_compare.sh [path/to/wafer] [extra wafer train args, e.g. --threads 2]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
wafer=${1:-$root/build/app/wafer}
shift || true
db=$(mktemp -d)/vsl-compare.sqlite
summary() {  # the summary event of `wafer train --json` as "eval_loss wall_s emulated_s"
  python3 -c 'import json,sys
for line in sys.stdin:
    e = json.loads(line)
    if e.get("event") == "summary":
        print(e["final_eval_loss"], e["elapsed_s"], e["emulated_s"])'
}
preset=$root/presets/gpt-nano-vsl.yaml
two=$("$wafer" train "$preset" --db "$db" --json --name vsl-two-stage "$@" | summary)
one=$("$wafer" train "$preset" --db "$db" --json --name vsl-single-stage \
      --set train_input.short_sequence_length=0 --set train_input.short_sequence_steps=0 "$@" |
      summary)
printf '%-34s %12s %10s %12s\n' run "eval loss" "wall s" "emulated s"
read -r l w e <<<"$two"; printf '%-34s %12.4f %10.1f %12.4g\n' "two-stage (128 -> 512 at 480)" "$l" "$w" "$e"
read -r l2 w2 e2 <<<"$one"; printf '%-34s %12.4f %10.1f %12.4g\n' "single-stage (512)" "$l2" "$w2" "$e2"
python3 -c "print(f'two-stage saves {100*(1-$w/$w2):.0f}% wall time and {100*(1-$e/$e2):.0f}% emulated time; eval loss {$l - $l2:+.4f}')"
