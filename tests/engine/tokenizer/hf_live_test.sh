#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The Hugging Face tokenizer against the tokenizers library live: runs
# scripts/make_tokenizer_fixtures.mjs with 200 extra random hard texts (seeded) through the
# library's Node binding, then the engine's reference test against what it wrote. Skipped (exit
# 77) when node or the npm package `tokenizers` is absent; set TOKENIZERS_NODE_MODULES to the
# node_modules folder it was installed into (npm install --prefix /tmp/tok tokenizers@0.23.2).
# Usage: hf_live_test.sh TEST_TOKENIZER_BINARY SOURCE_DIR
set -uo pipefail
binary=$1
src=$2
if ! command -v node >/dev/null; then
  echo "skipped: node is not installed (Debian package nodejs)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
node "$src/scripts/make_tokenizer_fixtures.mjs" --out "$tmp/expected.json" --random 200 \
  >"$tmp/node.log" 2>&1
code=$?
if [[ $code -eq 2 ]]; then
  echo "skipped: $(cat "$tmp/node.log")"
  exit 77
fi
[[ $code -eq 0 ]] || { cat "$tmp/node.log"; echo "FAIL: the fixture script failed ($code)"; exit 1; }
head -n 1 "$tmp/node.log"
WAFER_HF_EXPECTED="$tmp/expected.json" "$binary" --gtest_filter='HfReference.*'
