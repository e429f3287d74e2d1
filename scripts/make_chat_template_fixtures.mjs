#!/usr/bin/env node
// SPDX-License-Identifier: GPL-3.0-or-later
// Makes the reference renderings that tests/engine/chat/chat_reference_test.cpp checks the
// engine's chat templates against, with @huggingface/jinja (the Jinja implementation
// transformers.js renders chat templates with).
//
//   npm install --prefix /tmp/chat @huggingface/jinja@0.5.11 @huggingface/ollama-utils@0.0.18
//   CHAT_TEMPLATE_NODE_MODULES=/tmp/chat/node_modules node scripts/make_chat_template_fixtures.mjs
//
// Reads tests/engine/chat/fixtures/: templates.json (each template's text from a file there, from
// a committed tokenizer_config.json, or, for the Meta Llama templates, which are not committed
// (see LICENSES.md), from the npm package @huggingface/ollama-utils when it is installed) and
// conversations.json. Renders every template over every conversation with add_generation_prompt
// off and on, and writes one JSON file holding the templates' texts and, per case, the text or
// the error the template raised, and (add_generation_prompt off) the assistant spans or the
// message where the incremental render breaks. Options:
//   --out FILE     write there instead of fixtures/expected.json
//   --random N     add N random conversations (seeded) to the fixed ones (the live test does)
//   --no-llama     leave the Llama templates out even when ollama-utils is present (the
//                  committed expected.json is made with it)
// Exits 2 with a message when @huggingface/jinja cannot be found.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, "..");
const fixtures = path.join(root, "tests", "engine", "chat", "fixtures");

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const outFile = option("--out", path.join(fixtures, "expected.json"));
const randomCount = Number(option("--random", "0"));
const withLlama = !args.includes("--no-llama");

function resolvePackage(name) {
  const roots = [process.env.CHAT_TEMPLATE_NODE_MODULES, path.join(process.cwd(), "node_modules")]
    .filter(Boolean);
  for (const r of roots) {
    try {
      const require = createRequire(path.join(r, "noop.js"));
      const main = require.resolve(name);
      const pkgDir = main.slice(0, main.lastIndexOf(name) + name.length);
      const version = JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8")).version;
      return { main, pkgDir, version };
    } catch {
      // try the next place
    }
  }
  return null;
}

const jinjaPackage = resolvePackage("@huggingface/jinja");
if (!jinjaPackage) {
  console.error(
    "make_chat_template_fixtures: the npm package @huggingface/jinja was not found; install it " +
      "with `npm install --prefix /tmp/chat @huggingface/jinja@0.5.11 " +
      "@huggingface/ollama-utils@0.0.18` and set CHAT_TEMPLATE_NODE_MODULES=/tmp/chat/node_modules");
  process.exit(2);
}
const { Template } = await import(pathToFileURL(jinjaPackage.main).href);

// A JavaScript string literal in double or single quotes, read as JSON reads strings.
function jsString(literal) {
  if (literal.startsWith('"')) return JSON.parse(literal);
  let body = "";
  const inner = literal.slice(1, -1);
  for (let i = 0; i < inner.length; ++i) {
    if (inner[i] === "\\" && inner[i + 1] === "'") {
      body += "'";
      ++i;
    } else if (inner[i] === "\\") {
      body += inner[i] + inner[i + 1];
      ++i;
    } else {
      body += inner[i] === '"' ? '\\"' : inner[i];
    }
  }
  return JSON.parse('"' + body + '"');
}

// The Llama templates come from @huggingface/ollama-utils' table of GGUF chat templates, which the
// package ships as TypeScript source (src/chat-template-automap.ts) without exporting it: each
// entry's `model: "..."` and `gguf: "..."` string literals are read as JSON strings.
function ollamaTemplates() {
  const pkg = resolvePackage("@huggingface/ollama-utils");
  if (!pkg) return null;
  const file = path.join(pkg.pkgDir, "src", "chat-template-automap.ts");
  if (!fs.existsSync(file)) return null;
  const text = fs.readFileSync(file, "utf8");
  const byModel = new Map();
  const literal = String.raw`("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')`;
  const entry = new RegExp(String.raw`model: ${literal},\s*gguf: ${literal}`, "g");
  for (const m of text.matchAll(entry)) {
    try {
      byModel.set(jsString(m[1]), jsString(m[2]));
    } catch {
      // a literal this reader cannot read is not one of ours
    }
  }
  return { version: pkg.version, byModel };
}

function tokenText(t) {
  if (t === null || t === undefined) return "";
  return typeof t === "string" ? t : t.content ?? "";
}

async function loadTemplates() {
  const list = JSON.parse(fs.readFileSync(path.join(fixtures, "templates.json"), "utf8"));
  const ollama = withLlama ? ollamaTemplates() : null;
  const out = [];
  const skipped = [];
  for (const entry of list) {
    let source;
    let bos = entry.bos_token ?? "";
    let eos = entry.eos_token ?? "";
    if (entry.file) {
      source = fs.readFileSync(path.join(fixtures, entry.file), "utf8");
    } else if (entry.config) {
      const config = JSON.parse(fs.readFileSync(path.join(root, entry.config), "utf8"));
      source = config.chat_template;
      bos = tokenText(config.bos_token);
      eos = tokenText(config.eos_token);
    } else if (entry.ollama) {
      source = ollama?.byModel.get(entry.ollama);
      if (!source) {
        skipped.push(entry.name);
        continue;
      }
    }
    const extra = entry.date_string ? { date_string: entry.date_string } : {};
    out.push({ name: entry.name, source, bos_token: bos, eos_token: eos, extra_context: extra });
  }
  return { templates: out, skipped, ollamaVersion: ollama?.version };
}

// Random conversations from pieces that stress quoting, unicode and whitespace (seeded).
function randomConversations(count) {
  let state = 0x9e3779b9;
  const next = () => {
    state ^= state << 13; state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5; state >>>= 0;
    return state;
  };
  const pool = [
    "a", "Hello", " ", "  ", "\n", "\n\n", "\t", "'", "\"", "\\", "{{", "}}", "{%", "%}", "{#",
    "#}", "{", "}", "[INST]", "<|im_end|>", "</s>", "<s>", "日本", "中文", "🙂", "👨‍👩‍👧", "é",
    "e\u0301", "—", "0", "42", "3.14", "true", "None", "system", "assistant", ":", ",", ".",
  ];
  const text = () => {
    let t = "";
    const n = next() % 8;
    for (let k = 0; k < n; ++k) t += pool[next() % pool.length];
    return t;
  };
  const conversations = [];
  for (let i = 0; i < count; ++i) {
    const messages = [];
    if (next() % 2) messages.push({ role: "system", content: text() });
    const turns = 1 + (next() % 3);
    for (let t = 0; t < turns; ++t) {
      messages.push({ role: "user", content: text() });
      if (t + 1 < turns || next() % 2) messages.push({ role: "assistant", content: text() });
    }
    conversations.push({ name: `random_${i}`, messages });
  }
  return conversations;
}

const { templates, skipped, ollamaVersion } = await loadTemplates();
const conversations = JSON.parse(fs.readFileSync(path.join(fixtures, "conversations.json"), "utf8"))
  .concat(randomConversations(randomCount));
// The assistant spans as the engine defines them (chat_template.h), computed here with the
// reference library: for assistant message i, render(messages[:i], add_generation_prompt) must
// start with the render through the previous assistant message and be a prefix of
// render(messages[:i+1]), itself a prefix of the whole render; the span is the difference, in
// UTF-8 bytes. A template breaking that is recorded as refusing at message i+1.
function trainingSpans(template, t, messages) {
  const render = (list, prompt) =>
    template.render({
      messages: list,
      bos_token: t.bos_token,
      eos_token: t.eos_token,
      add_generation_prompt: prompt,
      tools: null,
      documents: null,
      ...t.extra_context,
    });
  const whole = render(messages, false);
  const spans = [];
  let previousTurn = "";
  for (let i = 0; i < messages.length; ++i) {
    if (messages[i].role !== "assistant") continue;
    let prompt, turn;
    try {
      prompt = render(messages.slice(0, i), true);
      turn = render(messages.slice(0, i + 1), false);
    } catch {
      return { refused_at_message: i + 1 };
    }
    if (!prompt.startsWith(previousTurn) || !turn.startsWith(prompt) || !whole.startsWith(turn))
      return { refused_at_message: i + 1 };
    spans.push([i, Buffer.byteLength(prompt, "utf8"), Buffer.byteLength(turn, "utf8")]);
    previousTurn = turn;
  }
  return { spans };
}

const cases = [];
for (const t of templates) {
  const template = new Template(t.source);
  for (const c of conversations) {
    for (const addGenerationPrompt of [false, true]) {
      const context = {
        messages: c.messages,
        bos_token: t.bos_token,
        eos_token: t.eos_token,
        add_generation_prompt: addGenerationPrompt,
        tools: null,
        documents: null,
        ...t.extra_context,
      };
      const result = { template: t.name, conversation: c.name, add_generation_prompt: addGenerationPrompt };
      try {
        result.text = template.render(context);
        if (!addGenerationPrompt) result.training = trainingSpans(template, t, c.messages);
      } catch (e) {
        result.error = String(e.message ?? e);
      }
      cases.push(result);
    }
  }
}
const output = {
  made_by: "scripts/make_chat_template_fixtures.mjs",
  library: `@huggingface/jinja ${jinjaPackage.version}`,
  ollama_utils: ollamaVersion ? `@huggingface/ollama-utils ${ollamaVersion}` : null,
  templates,
  conversations,
  cases,
};
fs.writeFileSync(outFile, JSON.stringify(output, null, 1) + "\n");
const errors = cases.filter((c) => c.error).length;
console.log(
  `rendered ${cases.length} cases (${templates.length} templates x ${conversations.length} ` +
    `conversations x add_generation_prompt off/on, ${errors} raised) with ${output.library}` +
    (skipped.length
      ? `; left out ${skipped.join(", ")} (${withLlama ? "@huggingface/ollama-utils not found" : "--no-llama"})`
      : ""));
