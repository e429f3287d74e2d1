#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Smoke test of the real wafer-studio binary under xvfb-run: open the nano preset, train 20
# steps, screenshot the given tab, quit with status 0. Uses a temporary run store and XDG dirs.
# Usage: studio_smoke.sh WAFER_STUDIO SOURCE_DIR TAB ARTIFACT_DIR
set -euo pipefail
studio=$1 src=$2 tab=$3 artifacts=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$artifacts"
export XDG_DATA_HOME="$tmp/data" XDG_CACHE_HOME="$tmp/cache" XDG_CONFIG_HOME="$tmp/config"
unset QT_QPA_PLATFORM  # a real (virtual) X display, not offscreen
shot="$artifacts/studio-smoke-$tab.png"
rm -f "$shot"
xvfb-run -a -s "-screen 0 1600x1000x24" "$studio" "$src/presets/gpt-nano.yaml" --run \
  --quit-after-steps 20 --screenshot "$shot" --tab "$tab" --db "$tmp/runs.sqlite" \
  --set runconfig.max_steps=200
test -s "$shot" || { echo "no screenshot written at $shot" >&2; exit 1; }
# The run must be in the store, stopped by the quit, with its loss points.
sqlite3 "$tmp/runs.sqlite" "select status from runs" 2>/dev/null | grep -q stopped ||
  { command -v sqlite3 >/dev/null && { echo "run not recorded as stopped" >&2; exit 1; }; }
echo "ok: $shot"
