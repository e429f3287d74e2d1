#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Prints a wafer output file (JSON lines, JSON, YAML or text) without what depends on the wall
clock, for scripts/refactor_compare.sh: timing and speed fields, the measured share of stream-in
time hidden behind compute, and the run ids a parallel sweep hands out in finishing order (sweep
trial lines are sorted by trial number)."""
import json
import re
import sys

CLOCK_KEYS = {"elapsed_s", "eta_s", "tokens_per_s", "wall_seconds", "created", "started",
              "finished", "date"}
HIDDEN = re.compile(r"\d+% of stream-in time hidden behind compute")


def scrub(value):
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items() if k not in CLOCK_KEYS}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, str):
        return HIDDEN.sub("N% of stream-in time hidden behind compute", value)
    return value


def main(path):
    text = open(path, encoding="utf-8", errors="replace").read()
    try:
        print(json.dumps(scrub(json.loads(text)), indent=1, sort_keys=True))
        return
    except ValueError:
        pass
    lines = []
    trials = []
    for line in text.splitlines():
        try:
            obj = scrub(json.loads(line))
        except ValueError:
            lines.append(HIDDEN.sub("N% of stream-in time hidden behind compute", line))
            continue
        if isinstance(obj, dict) and obj.get("event") == "trial":
            obj.pop("run_id", None)
            trials.append(obj)
            continue
        lines.append(json.dumps(obj, sort_keys=True))
    trials.sort(key=lambda t: t.get("trial", 0))
    lines += [json.dumps(t, sort_keys=True) for t in trials]
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1])
