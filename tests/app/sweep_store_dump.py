#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Prints what a run store records of a sweep, trial by trial, without what may differ between
two runs of the same sweep (run ids, dates, wall and elapsed times, throughput, the store's own
file name): two stores of one sweep run with 1, 2 or 3 processes must print the same text.
Usage: sweep_store_dump.py STORE.sqlite [SWEEP_RUN_ID]"""
import hashlib
import json
import os
import struct
import re
import sqlite3
import sys

db = sys.argv[1]
con = sqlite3.connect(db)
sweep = int(sys.argv[2]) if len(sys.argv) > 2 else con.execute(
    "select max(id) from runs where kind = 'sweep'").fetchone()[0]
stem = os.path.splitext(os.path.basename(db))[0]
folder = os.path.dirname(db)


def tensors_digest(path):
    """SHA-256 of a safetensors file's tensors (names, dtypes, shapes, bytes), metadata aside."""
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    digest = hashlib.sha256(json.dumps(header, sort_keys=True).encode())
    digest.update(data[8 + n:])
    return digest.hexdigest()


def clean(text):
    if folder:
        text = text.replace(folder + "/", "")
    return text.replace(stem + "-runs", "RUNS")


name, status, summary = con.execute(
    "select name, status, summary_json from runs where id = ?", (sweep,)).fetchone()
summary = json.loads(summary or "{}")
summary.pop("elapsed_s", None)
print("sweep", status, json.dumps(summary, sort_keys=True))
rows = con.execute(
    "select trial, point_key, status, steps, final_loss, rung_losses, reason, run "
    "from sweep_trials where sweep_run = ? order by trial", (sweep,)).fetchall()
for trial, point, status, steps, final_loss, rungs, reason, run in rows:
    print(f"trial {trial} {point} {status} steps {steps} final_loss {final_loss!r} "
          f"rungs {rungs} reason {reason!r}")
    if run is None:
        continue
    rname, rstatus, rkind, rsweep, rhash, rdir, rsummary = con.execute(
        "select name, status, kind, sweep_id, config_hash, model_dir, summary_json "
        "from runs where id = ?", (run,)).fetchone()
    rsummary = json.loads(rsummary or "{}")
    for key in ("elapsed_s", "tokens_per_s"):
        rsummary.pop(key, None)
    assert rsweep == sweep, f"trial {trial}: run {run} belongs to sweep {rsweep}"
    assert rdir.endswith(f"run-{run}"), f"trial {trial}: run {run} has folder {rdir}"
    model = os.path.join(rdir, "model.safetensors")
    assert os.path.isfile(model), f"trial {trial}: no model in {rdir}"
    print(f"  run {rname[rname.index('#'):]} {rstatus} {rkind} {rhash} "
          f"{json.dumps(rsummary, sort_keys=True)} tensors {tensors_digest(model)}")
    for step, key, value, special in con.execute(
            "select step, key, value, special from metrics where run = ? and key != "
            "'tokens_per_s' order by step, key, rowid", (run,)):
        print(f"  {step} {key} {value!r} {special or ''}")
    for level, message in con.execute(
            "select level, message from events where run = ? order by rowid", (run,)):
        message = re.sub(r"run-\d+", "run-N", clean(message))
        if message.startswith("streaming:"):  # how much streaming hid behind compute
            message = re.sub(r"; \d+% of stream-in time hidden behind compute", "", message)
        print(f"  {level}: {message}")
