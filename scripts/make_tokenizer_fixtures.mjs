#!/usr/bin/env node
// SPDX-License-Identifier: GPL-3.0-or-later
// Makes the reference token ids that tests/engine/tokenizer/hf_reference_test.cpp checks the
// engine's Hugging Face tokenizer against, with the Hugging Face `tokenizers` library itself (its
// Node binding, npm package `tokenizers`, native prebuilt).
//
//   npm install --prefix /tmp/tok tokenizers@0.23.2
//   TOKENIZERS_NODE_MODULES=/tmp/tok/node_modules node scripts/make_tokenizer_fixtures.mjs
//
// Reads tests/engine/tokenizer/fixtures/hf/: the real tokenizer.json files (gzipped, see
// LICENSES.md there) and variants.json (the same vocabularies with another normalizer,
// pre-tokenizer, decoder or post-processor, e.g. Llama 2's layout, so that each pipeline the
// engine implements is checked on a real vocabulary). For every tokenizer and text it records the
// ids without and with special tokens, the library's decode of them, and the offsets of both
// encodings. Offsets: the Node binding's Encoding.getOffsets() gives [start, end) in CHARACTERS
// (Unicode code points: "👍" counts 1, not UTF-16's 2), converted from the Rust library's byte
// offsets; they are recorded as given ("offsets_chars", "offsets_chars_special"), and the C++
// test converts the engine's byte offsets the same way before comparing (a token inside a
// character maps to that character, so comparing in bytes would lose nothing the library shows).
// Options:
//   --out FILE     write there instead of fixtures/hf/expected.json
//   --random N     add N random hard texts (seeded) to the fixed ones (the live test does)
// Exits 2 with a message when the `tokenizers` package cannot be found.
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const fixtures = path.join(here, "..", "tests", "engine", "tokenizer", "fixtures", "hf");

function loadLibrary() {
  const roots = [process.env.TOKENIZERS_NODE_MODULES, process.cwd()].filter(Boolean);
  for (const root of roots) {
    try {
      const require = createRequire(path.join(root, "noop.js"));
      return { lib: require("tokenizers"), version: require("tokenizers/package.json").version };
    } catch {
      // try the next place
    }
  }
  console.error(
    "make_tokenizer_fixtures: the npm package `tokenizers` was not found; install it with " +
      "`npm install --prefix /tmp/tok tokenizers@0.23.2` and set " +
      "TOKENIZERS_NODE_MODULES=/tmp/tok/node_modules");
  process.exit(2);
}

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const outFile = option("--out", path.join(fixtures, "expected.json"));
const randomCount = Number(option("--random", "0"));

// The hard cases; variants.json's texts are shared by every tokenizer.
const fixed = JSON.parse(fs.readFileSync(path.join(fixtures, "texts.json"), "utf8"));

// Random texts from pieces that stress each phase (seeded: the same texts on every run).
function randomTexts(count) {
  let state = 0x2545f491;
  const next = () => {
    state ^= state << 13; state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5; state >>>= 0;
    return state;
  };
  const pool = [
    "a", "Z", "the", " The", "I'M", "'s", "'Ll", "don't", " ", "  ", "   ", "\t", "\n", "\r\n",
    "\n\n", "0", "7", "123", "4567", "3.14", ",", ".", "!?", "...", "—", "中", "文字", "日本",
    "한국", "é", "e\u0301", "A\u030a", "ß", "ﬁ", "\u00a0", "\u3000", "\u180e", "\u0085", "👍",
    "👨‍👩‍👧", "🇫🇷", "👋🏽", "𝔘", "\u0007", "<|im_start|>", "<|im_end|>", "<|endoftext|>",
    "<|startoftext|>", "<unk>", "<s>", "</s>", "▁", "_", "(x)", "{}", "$", "#", "@user",
  ];
  const texts = [];
  for (let i = 0; i < count; ++i) {
    let t = "";
    const n = 1 + (next() % 12);
    for (let k = 0; k < n; ++k) t += pool[next() % pool.length];
    texts.push(t);
  }
  return texts;
}

function readBase(name) {
  return JSON.parse(zlib.gunzipSync(fs.readFileSync(path.join(fixtures, name, "tokenizer.json.gz"))).toString("utf8"));
}

// A variant: the base file with top-level keys replaced, optionally its merges as pairs and some
// added tokens' flags changed (added_tokens_patch: content -> flags).
export function makeVariant(base, variant) {
  const json = structuredClone(base);
  for (const [key, value] of Object.entries(variant.set || {})) json[key] = value;
  for (const [key, value] of Object.entries(variant.model || {})) json.model[key] = value;
  if (variant.merges_as_pairs) json.model.merges = json.model.merges.map((m) => m.split(" "));
  for (const [content, flags] of Object.entries(variant.added_tokens_patch || {})) {
    const token = json.added_tokens.find((t) => t.content === content);
    if (!token) throw new Error(`${variant.name}: no added token ${content}`);
    Object.assign(token, flags);
  }
  return json;
}

async function main() {
  const { lib, version } = loadLibrary();
  const variants = JSON.parse(fs.readFileSync(path.join(fixtures, "variants.json"), "utf8"));
  const texts = [...fixed, ...randomTexts(randomCount)];
  const bases = {};
  const out = { library: `tokenizers ${version} (npm)`, texts, tokenizers: {} };
  for (const v of variants.tokenizers) {
    bases[v.base] ??= readBase(v.base);
    const json = makeVariant(bases[v.base], v);
    const tok = lib.Tokenizer.fromString(JSON.stringify(json));
    const entry = {
      without_special: [], with_special: [], decoded: [], offsets_chars: [],
      offsets_chars_special: [],
    };
    for (const text of texts) {
      const plain = await tok.encode(text, null, { addSpecialTokens: false });
      const special = await tok.encode(text, null, { addSpecialTokens: true });
      entry.without_special.push(plain.getIds());
      entry.with_special.push(special.getIds());
      entry.decoded.push(await tok.decode(plain.getIds(), false));
      entry.offsets_chars.push(plain.getOffsets());
      entry.offsets_chars_special.push(special.getOffsets());
    }
    out.tokenizers[v.name] = entry;
    console.log(`${v.name}: ${texts.length} texts`);
  }
  fs.writeFileSync(outFile, JSON.stringify(out) + "\n");
  console.log(`wrote ${outFile}`);
}

await main();
