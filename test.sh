#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Quick start, command 2: installs what is missing, builds with warnings as errors, and runs
# every test (unit, integration, GUI offscreen, CLI smoke). Extra arguments go to ctest
# (e.g. ./test.sh -L engine, ./test.sh -LE slow).
# ./test.sh --sanitize address,undefined | --sanitize thread: the engine and CLI tests (no GUI)
# under ASan+UBSan or TSan, in build-asan / build-tsan (tests/sanitizers/ holds the options).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ "${1:-}" == --sanitize || "${1:-}" == --sanitize=* ]]; then
  exec "$root/tests/sanitizers/run.sh" "$@"
fi
build="$root/build-test"
"$root/scripts/build.sh" "$build" -DWAFER_WARNINGS_AS_ERRORS=ON
export QT_QPA_PLATFORM=offscreen
cd "$build"
ctest --output-on-failure --timeout 900 -j "$(nproc)" "$@"
