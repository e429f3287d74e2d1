#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Writes the studio's own instruction data set: questions about verses of the bundled corpus
(resources/corpus, the public-domain King James text) whose answers can be checked exactly.

Usage: scripts/make_instruction_set.py [--train N] [--held-out N] [--seed S] [--out DIR]
Default output: resources/instructions/{train,held-out}.jsonl, one OpenAI `messages` record per
line: the user asks for the last word of a verse (quoted on the next line), the assistant answers
"The last word is WORD." (WORD without its punctuation). The sentence keeps the word after a space,
as it is in the verse, so a byte-level BPE tokenizer spells it with the verse's own tokens (GPT-2's
" nations" is one token, "nations" at the start of a line two): a bare word after a chat template's
newline must be re-spelled, which a small model learns far more slowly. Nothing is copied from elsewhere: the questions are
this script's, the verses come from the corpus the studio already ships. Deterministic: the same
arguments give the same bytes. A verse is either in the training set or held out, never both, so
the held-out exact match measures the skill, not memory.
"""
import argparse
import json
import pathlib
import random
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
QUESTION = "What is the last word of this verse?"
ANSWER = "The last word is {}."


def verses(corpus: pathlib.Path):
    """(book, verse) for every verse of 6 to 30 words, in corpus order."""
    out = []
    for path in sorted(corpus.glob("kjv-*.txt")):
        lines = path.read_text(encoding="utf-8").split("\n")
        book = lines[0].strip()
        for line in lines[1:]:
            line = line.strip()
            if not line or line.startswith("Chapter "):
                continue
            if 6 <= len(line.split()) <= 30:
                out.append((book, line))
    return out


def last_word(verse: str) -> str:
    return re.sub(r"[^A-Za-z']", "", verse.split()[-1])


def record(verse: str):
    return {"messages": [{"role": "user", "content": f"{QUESTION}\n{verse}"},
                         {"role": "assistant", "content": ANSWER.format(last_word(verse))}]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train", type=int, default=3000)
    parser.add_argument("--held-out", type=int, default=200)
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "resources" / "instructions")
    args = parser.parse_args()
    pool = [v for v in verses(ROOT / "resources" / "corpus") if last_word(v[1])]
    random.Random(args.seed).shuffle(pool)
    if args.train + args.held_out > len(pool):
        raise SystemExit(f"only {len(pool)} verses qualify; ask for fewer records")
    args.out.mkdir(parents=True, exist_ok=True)
    splits = {"train.jsonl": pool[:args.train],
              "held-out.jsonl": pool[args.train:args.train + args.held_out]}
    for name, chosen in splits.items():
        with open(args.out / name, "w", encoding="utf-8", newline="\n") as f:
            for _, verse in chosen:
                f.write(json.dumps(record(verse), ensure_ascii=False) + "\n")
        print(f"{args.out / name}: {len(chosen)} records")


if __name__ == "__main__":
    main()
