#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Writes what a real sweep's run store recorded of its timing, for eta_test.cpp: every trial's
start (its run's first logged event), a step every STRIDE steps (and its first and last) with the
wall time the store gave that step's loss, and its end (its last event or step, whichever is
later), in seconds from the sweep's first trial start.
Usage: record_sweep_timings.py STORE.sqlite PRESET [OVERRIDE ...] > mup_sweep_timings.csv
(PRESET and OVERRIDEs as the sweep ran: `wafer sweep presets/PRESET --set OVERRIDE ...`)."""
import datetime
import platform
import sqlite3
import sys

STRIDE = 10
db, preset, overrides = sys.argv[1], sys.argv[2], sys.argv[3:]
con = sqlite3.connect(db)
sweep = con.execute("select max(id) from runs where kind = 'sweep'").fetchone()[0]


def epoch(iso):
    return datetime.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


rows = []
for trial, run, steps in con.execute(
        "select trial, run, steps from sweep_trials where sweep_run = ? and run is not null "
        "order by trial", (sweep,)):
    events = [epoch(t) for (t,) in con.execute(
        "select time from events where run = ? order by rowid", (run,))]
    points = con.execute("select step, wall_time from metrics where run = ? and key = 'loss' "
                         "order by step", (run,)).fetchall()
    if not events or not points:
        continue
    start = min(events[0], points[0][1])
    end = max(events[-1], points[-1][1])
    rows.append((trial, "start", 0, start))
    for i, (step, wall) in enumerate(points):
        if i == 0 or i == len(points) - 1 or step % STRIDE == 0:
            rows.append((trial, "step", step, wall))
    rows.append((trial, "end", points[-1][0], end))
origin = min(r[3] for r in rows)
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")),
           platform.processor())
print(f"# A real `wafer sweep` (sweep run {sweep} of its store), recorded by "
      f"record_sweep_timings.py on {cpu}; seconds from its first trial's start.")
print(f"# preset: {preset}")
for o in overrides:
    print(f"# override: {o}")
print("trial,event,step,seconds")
for trial, kind, step, at in sorted(rows, key=lambda r: (r[3], r[0])):
    print(f"{trial},{kind},{step},{at - origin:.3f}")
