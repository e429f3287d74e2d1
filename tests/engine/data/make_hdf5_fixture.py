#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Writes ModelZoo-style preprocessed GPT data sets with h5py, an HDF5 writer independent of the
engine's reader (engine/data/hdf5_files.h), plus expected.json: every sample's rows in the order
ModelZoo's readers visit them. tests/engine/data/hdf5_dataset_test.cpp reads the files with the
engine and checks its batches token for token against expected.json.

The files are written as Cerebras/modelzoo (Release 2.10.0) writes them:
  - plain/: hdf5_preprocessing/hdf5_base_preprocessor.py write_hdf5_file (write_in_batch off):
    attrs["n_examples"] = n, then create_dataset("data", shape=(n, 3, msl), dtype="i4",
    chunks=(1, 3, msl), compression="gzip") filled row by row; samples from utils.py
    create_features_auto_lm (text: mask 1 on real tokens, 0 on padding) and
    create_features_summarization (prompt/completion: mask 0 on the prompt but its last token,
    1 on the completion, 0 on EOS and padding). File names examples_<n>.h5, four of them so
    that the sorted order (examples_0, _1, _10, _2) differs from the numeric one.
  - vsl/: data_preprocessing/data_preprocessor.py save_buffer_to_hdf5 (create_dataset("data",
    data=..., dtype="i4", chunks=(1, 5, msl), compression="gzip"), then attrs["n_examples"]);
    samples from vsl_finetuning_token_generator.py create_features_finetuning_vsl (several
    prompt/completion pairs packed per row; rows input_ids, input_mask, labels, attention_span,
    position_ids). File name output_chunk_0_0.h5.
  - full/: 24 samples of text a full row long (loss mask all 1) in examples_0.h5 and
    examples_1.h5, written like plain/: a data set that trains without a loss mask. Each row
    counts up from a random start (token t + 1 follows token t, mod 62, from 2), so a model can
    learn it.
  - vslfull/: 12 packed rows in output_chunk_0_0.h5 from vsl_pretraining_token_generator.py
    create_features_auto_lm_vsl: counting documents of 2 to 8 tokens packed to fill each row
    exactly (loss mask all 1; position_ids restart at each document), written like vsl/.

Usage: make_hdf5_fixture.py OUT_DIR [--seed N]
"""

import argparse
import json
import os
import random
from pathlib import Path

import h5py
import numpy as np

VOCAB = 64
MSL = 12
PAD, EOS = 0, 1


def auto_lm(tokens):
    """utils.py create_features_auto_lm (short_seq_prob 0, no inverted mask)."""
    input_ids = tokens[:-1]
    labels = tokens[1:]
    mask = [1] * len(input_ids)
    pad = MSL - len(input_ids)
    return np.stack([np.int32(input_ids + [PAD] * pad), np.int32(mask + [0] * pad),
                     np.int32(labels + [PAD] * pad)])


def summarization(prompt, completion):
    """utils.py create_features_summarization (no sep_id, no inverted mask)."""
    token_ids = prompt + completion + [EOS]
    mask = [0] * len(prompt)
    mask[-1] = 1  # no sep_id: prediction starts at the last prompt token
    mask += [1] * len(completion) + [0]
    token_ids += [PAD] * (MSL + 1 - len(token_ids))
    mask += [0] * (MSL - len(mask))
    return np.stack([np.int32(token_ids[:-1]), np.int32(mask), np.int32(token_ids[1:])])


def finetuning_vsl(pairs):
    """vsl_finetuning_token_generator.py create_features_finetuning_vsl."""
    input_ids, input_mask, labels, span, positions = [], [], [], [], []
    for i, (token_ids, token_mask) in enumerate(pairs):
        input_ids += token_ids
        labels += token_ids
        input_mask += token_mask
        n = len(token_ids) if i != len(pairs) - 1 else len(token_ids) - 1
        span += list(range(n - 1, -1, -1))
        positions += list(range(n))
    input_ids, labels, input_mask = input_ids[:-1], labels[1:], input_mask[1:]
    pad = MSL - len(input_ids)
    return np.stack([np.int32(input_ids + [PAD] * pad), np.int32(input_mask + [0] * pad),
                     np.int32(labels + [PAD] * pad), np.int32(span + [0] * pad),
                     np.int32(positions + [0] * pad)])


def pretraining_vsl(docs):
    """vsl_pretraining_token_generator.py create_features_auto_lm_vsl (mask 1 on every token)."""
    input_ids, input_mask, labels, span, positions = [], [], [], [], []
    for i, doc in enumerate(docs):
        input_ids += doc
        input_mask += [1] * len(doc)
        labels += doc
        n = len(doc) - 1 if i == len(docs) - 1 else len(doc)
        span += list(range(n - 1, -1, -1))
        positions += list(range(n))
    input_ids, input_mask, labels = input_ids[:-1], input_mask[:-1], labels[1:]
    pad = MSL - len(input_ids)
    return np.stack([np.int32(input_ids + [PAD] * pad), np.int32(input_mask + [0] * pad),
                     np.int32(labels + [PAD] * pad), np.int32(span + [0] * pad),
                     np.int32(positions + [0] * pad)])


def words(rng, n):
    return [rng.randrange(2, VOCAB) for _ in range(n)]


def write_rows(path, samples):
    """hdf5_base_preprocessor.py write_hdf5_file, write_in_batch off."""
    n, features = len(samples), samples[0].shape[0]
    with h5py.File(path, mode="w") as h5_file:
        h5_file.attrs["n_examples"] = n
        dset = h5_file.create_dataset("data", shape=(n, features, MSL), dtype="i4",
                                      chunks=(1, features, MSL), compression="gzip")
        for idx, f in enumerate(samples):
            dset[idx] = f


def write_batch(path, samples):
    """data_preprocessor.py save_buffer_to_hdf5, write_in_batch on."""
    data = np.stack(samples)
    with h5py.File(path, mode="w") as h5_file:
        h5_file.create_dataset("data", data=data, dtype="i4", chunks=(1, *data.shape[1:]),
                               compression="gzip")
        h5_file.attrs["n_examples"] = data.shape[0]


def expected(folder):
    """Every sample in the order ModelZoo's readers visit them: sorted(glob('*.h5')), then rows."""
    out = []
    files = sorted(Path(folder).glob("*.h5"))
    for path in files:
        with h5py.File(path, "r") as f:
            data = f["data"][()]
            assert data.dtype == np.int32 and f.attrs["n_examples"] == data.shape[0]
            for row, sample in enumerate(data):
                entry = {"file": path.name, "row": row, "input_ids": sample[0].tolist(),
                         "loss_mask": sample[1].tolist(), "labels": sample[2].tolist()}
                if sample.shape[0] == 5:
                    entry["position_ids"] = sample[4].tolist()
                out.append(entry)
    return {"files": [p.name for p in files], "samples": out}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out_dir")
    parser.add_argument("--seed", type=int, default=34)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    plain = os.path.join(args.out_dir, "plain")
    vsl = os.path.join(args.out_dir, "vsl")
    os.makedirs(plain, exist_ok=True)
    os.makedirs(vsl, exist_ok=True)

    for name, count in (("examples_0.h5", 3), ("examples_1.h5", 2), ("examples_2.h5", 2),
                        ("examples_10.h5", 1)):
        samples = []
        for _ in range(count):
            if rng.random() < 0.5:
                samples.append(auto_lm(words(rng, rng.randrange(4, MSL + 1)) + [EOS]))
            else:
                samples.append(summarization(words(rng, rng.randrange(2, 5)),
                                             words(rng, rng.randrange(1, 5))))
        write_rows(os.path.join(plain, name), samples)

    packed = []
    for _ in range(3):
        pairs, used = [], 0
        while True:
            prompt, completion = words(rng, rng.randrange(1, 4)), words(rng, rng.randrange(1, 4))
            ids = prompt + completion + [EOS]
            if used + len(ids) > MSL + 1 or (pairs and rng.random() < 0.3):
                break
            pairs.append((ids, [0] * len(prompt) + [1] * len(completion) + [1]))
            used += len(ids)
        packed.append(finetuning_vsl(pairs))
    write_batch(os.path.join(vsl, "output_chunk_0_0.h5"), packed)

    full = os.path.join(args.out_dir, "full")
    os.makedirs(full, exist_ok=True)
    for name in ("examples_0.h5", "examples_1.h5"):
        samples = []
        for _ in range(12):
            start = rng.randrange(0, VOCAB - 2)
            samples.append(auto_lm([2 + (start + t) % (VOCAB - 2) for t in range(MSL + 1)]))
        write_rows(os.path.join(full, name), samples)

    vslfull = os.path.join(args.out_dir, "vslfull")
    os.makedirs(vslfull, exist_ok=True)
    rows = []
    for _ in range(12):
        docs, left = [], MSL + 1
        while left > 0:
            n = min(left, rng.randrange(2, 9))
            if left - n == 1:
                n += 1  # no one-token document at the end
            start = rng.randrange(0, VOCAB - 2)
            docs.append([2 + (start + t) % (VOCAB - 2) for t in range(n)])
            left -= n
        rows.append(pretraining_vsl(docs))
    write_batch(os.path.join(vslfull, "output_chunk_0_0.h5"), rows)

    with open(os.path.join(args.out_dir, "expected.json"), "w") as f:
        json.dump({"vocab_size": VOCAB, "max_sequence_length": MSL, "seed": args.seed,
                   "writer": "h5py " + h5py.__version__, "plain": expected(plain),
                   "vsl": expected(vsl), "full": expected(full),
                   "vslfull": expected(vslfull)}, f, indent=1)


if __name__ == "__main__":
    main()
