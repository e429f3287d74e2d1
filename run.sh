#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Quick start, command 1: installs what is missing, builds, and opens Wafer Studio on the default
# preset. `./run.sh --headless` trains the default preset from the command line instead (also the
# fallback when no display is available). Extra arguments after --headless go to `wafer train`.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build="$root/build"
"$root/scripts/build.sh" "$build"
preset="$root/presets/gpt-nano.yaml"

headless=0
if [[ "${1:-}" == "--headless" ]]; then
  headless=1
  shift
elif [[ -z "${DISPLAY:-}" && -z "${WAYLAND_DISPLAY:-}" ]]; then
  echo "run.sh: no display found (DISPLAY and WAYLAND_DISPLAY are unset), so training the default" >&2
  echo "run.sh: preset headless instead. Run on a desktop session to open the studio." >&2
  headless=1
fi
if [[ $headless -eq 0 && ! -x "$build/app/wafer-studio" ]]; then
  echo "run.sh: this build has no studio window (wafer-studio); training headless instead." >&2
  headless=1
fi
if [[ $headless -eq 1 ]]; then
  exec "$build/app/wafer" train "$preset" "$@"
fi
exec "$build/app/wafer-studio" "$preset" "$@"
