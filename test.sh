#!/usr/bin/env bash
# Quick start, command 2: installs what is missing, builds with warnings as errors, and runs
# every test (unit, integration, GUI offscreen, CLI smoke). Extra arguments go to ctest
# (e.g. ./test.sh -L engine, ./test.sh -LE slow).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build="$root/build-test"
"$root/scripts/build.sh" "$build" -DWAFER_WARNINGS_AS_ERRORS=ON
export QT_QPA_PLATFORM=offscreen
cd "$build"
ctest --output-on-failure --timeout 900 -j "$(nproc)" "$@"
