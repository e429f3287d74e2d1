#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The chat templates against @huggingface/jinja live: runs scripts/make_chat_template_fixtures.mjs
# (with the Llama 3.1/3.2 templates when @huggingface/ollama-utils is installed, and 100 random
# conversations, seeded), then the engine's reference tests against what it wrote. Skipped
# (exit 77) when node or @huggingface/jinja is absent; set CHAT_TEMPLATE_NODE_MODULES to the
# node_modules folder they were installed into
# (npm install --prefix /tmp/chat @huggingface/jinja@0.5.11 @huggingface/ollama-utils@0.0.18).
# Usage: jinja_live_test.sh TEST_CHAT_BINARY SOURCE_DIR
set -uo pipefail
binary=$1
src=$2
if ! command -v node >/dev/null; then
  echo "skipped: node is not installed (Debian package nodejs)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
node "$src/scripts/make_chat_template_fixtures.mjs" --out "$tmp/expected.json" --random 100 \
  >"$tmp/node.log" 2>&1
code=$?
if [[ $code -eq 2 ]]; then
  echo "skipped: $(cat "$tmp/node.log")"
  exit 77
fi
[[ $code -eq 0 ]] || { cat "$tmp/node.log"; echo "FAIL: the fixture script failed ($code)"; exit 1; }
head -n 1 "$tmp/node.log"
WAFER_CHAT_EXPECTED="$tmp/expected.json" "$binary" --gtest_filter='ChatReference.*'
