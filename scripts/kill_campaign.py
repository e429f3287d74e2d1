#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Kill campaign: SIGKILL `wafer train` and `wafer sweep` at random moments, resume each time until
the run finishes, and check that nothing was lost.

Every trial trains a tiny model (a few seconds) in one configuration - MemoryX in RAM or in a file,
1 or 4 emulated systems, fp32 or bf16 - or runs a small sweep. While it runs, the trial kills the
process with SIGKILL, either after a random delay or exactly at a kill point the engine raises when
WAFER_TEST_KILL_AT=<point>:<N> is set (engine/core/kill_points.h: inside a MemoryX layer update,
a checkpoint write, a run store transaction, ...). After every kill it checks the run store
(`PRAGMA integrity_check`) and that every checkpoint folder is complete or absent, then resumes
(`wafer train --resume MODEL_DIR`, `wafer sweep --resume ID`) until the run ends. At the end:
  - the final weights (model.safetensors) and the newest checkpoint's optimizer state hold the same
    tensors, byte for byte, as an uninterrupted run of the same configuration;
  - the loss curve in the store has every step exactly once, each value equal to the uninterrupted
    run's;
  - the store passes PRAGMA integrity_check, and its checkpoint rows name exactly the checkpoint
    folders on disk with their SHA-256;
  - every checkpoint folder is complete: model.safetensors, optimizer.safetensors and
    trainer_state.json, the SHA-256 trainer_state.json records matching the files;
  - no run is left "running" (`wafer runs list --json`) and the run's stored status is finished;
  - no partial files (.checkpoint-*.partial, .*.tmp-*) are left in the model folder.
A sweep trial checks the same per sweep trial (loss and tensors against an uninterrupted sweep).

Usage: scripts/kill_campaign.py [--kills 120] [--seed S] [--configs ram-1-fp32,file-4-bf16,...]
       [--wafer build/app/wafer] [--work DIR] [--keep]
The seed is printed first; rerun with --seed to reproduce a failure (timing-based kills land where
the machine's speed puts them; hooked kills land at the same point again). Exit 0 when every check
passed. Python standard library only.
"""
import argparse
import collections
import hashlib
import json
import os
import random
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRESET = os.path.join(ROOT, "presets", "gpt-nano.yaml")
MAX_STEPS = 24
SWEEP_STEPS = 12
SWEEP_LRS = [0.001, 0.003]
CHECKPOINT_FILES = ("model.safetensors", "optimizer.safetensors", "trainer_state.json")
CONFIGS = [f"{mx}-{n}-{p}" for mx in ("ram", "file") for n in (1, 4) for p in ("fp32", "bf16")]

# Kill points (engine/core/kill_points.h) and how many visits a run makes at most (N is drawn
# from 1..that; a larger N than the run reaches just lets the attempt finish).
HOOKS = {
    "step-end": MAX_STEPS,
    "memoryx-update": MAX_STEPS * 6,
    "atomic-commit": (MAX_STEPS // 2 + 2) * 3,
    "checkpoint-rename": MAX_STEPS // 2 + 1,
    "checkpoint-record": MAX_STEPS // 2 + 1,
    "checkpoint-prune": MAX_STEPS // 2 - 2,
    "store-commit": 40,
}


def tiny_args(config, work):
    """--set arguments of a tiny run in `config` (e.g. file-4-bf16)."""
    mx, systems, precision = config.split("-")
    sets = {
        "model.hidden_size": 32, "model.num_hidden_layers": 2, "model.num_heads": 2,
        "model.filter_size": 64, "train_input.max_sequence_length": 32,
        "train_input.batch_size": 4, "eval_input.batch_size": 4,
        "runconfig.eval_frequency": 4, "runconfig.eval_steps": 1, "runconfig.log_steps": 1,
        "runconfig.checkpoint_steps": 2, "runconfig.max_checkpoints": 3,
        "runconfig.save_initial_checkpoint": "true", "runconfig.num_csx": systems,
        "runconfig.num_threads": 1,
        "model.mixed_precision": "true" if precision == "bf16" else "false",
        "memoryx.backing": mx,
    }
    if mx == "file":
        sets["memoryx.path"] = os.path.join(work, "memoryx.bin")
    args = []
    for key, value in sets.items():
        args += ["--set", f"{key}={value}"]
    return args


# --- Reading what a run left -------------------------------------------------------------------

def tensors(path):
    """name -> (dtype, shape, bytes) of a safetensors file, metadata left out."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    body = data[8 + n:]
    return {k: (v["dtype"], tuple(v["shape"]), body[v["data_offsets"][0]:v["data_offsets"][1]])
            for k, v in header.items()}


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def checkpoint_folders(model_dir):
    out = {}
    if os.path.isdir(model_dir):
        for name in os.listdir(model_dir):
            if name.startswith("checkpoint-") and name[len("checkpoint-"):].isdigit():
                out[int(name[len("checkpoint-"):])] = os.path.join(model_dir, name)
    return dict(sorted(out.items()))


def incomplete_checkpoints(model_dir):
    """Problems of checkpoint folders that are neither complete nor absent."""
    problems = []
    for step, folder in checkpoint_folders(model_dir).items():
        missing = [f for f in CHECKPOINT_FILES if not os.path.isfile(os.path.join(folder, f))]
        if missing:
            problems.append(f"{folder}: missing {', '.join(missing)}")
            continue
        try:
            with open(os.path.join(folder, "trainer_state.json")) as f:
                state = json.load(f)
        except (OSError, ValueError) as e:
            problems.append(f"{folder}/trainer_state.json unreadable: {e}")
            continue
        files = state.get("files") if isinstance(state.get("files"), dict) else {}
        recorded = {name: (entry or {}).get("sha256") for name, entry in files.items()}
        for name in CHECKPOINT_FILES[:2]:
            want = recorded.get(name) if recorded else None
            if want is None:
                problems.append(f"{folder}/trainer_state.json records no SHA-256 of {name}")
            elif want != sha256(os.path.join(folder, name)):
                problems.append(f"{folder}/{name}: SHA-256 differs from trainer_state.json's")
        if state.get("global_step", step) != step:
            problems.append(f"{folder}: trainer_state.json says step {state.get('global_step')}")
    return problems


def leftovers(model_dir):
    out = []
    for base, dirs, files in os.walk(model_dir):
        for name in dirs + files:
            if (name.startswith(".checkpoint-") or ".tmp-" in name or name.endswith(".creating")):
                out.append(os.path.join(base, name))
    return out


def integrity(db):
    if not os.path.exists(db):
        return None
    con = sqlite3.connect(db, timeout=10)
    try:
        return con.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        con.close()


def query(db, sql, *args):
    """Rows of `sql`; none from a store a kill left before its schema was created."""
    if not os.path.exists(db):
        return []
    con = sqlite3.connect(db, timeout=10)
    try:
        if not con.execute("SELECT 1 FROM sqlite_master WHERE name = 'runs'").fetchall():
            return []
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def loss_curve(db, run):
    return query(db, "SELECT step, value, special FROM metrics WHERE run = ? AND key = 'loss' "
                     "ORDER BY step, rowid", run)


def memoryx_journal_valid(path):
    """Whether a file-backed MemoryX was killed inside a layer update (header.journalValid)."""
    try:
        with open(path, "rb") as f:
            head = f.read(48)
        return len(head) == 48 and head[:8] == b"WAFERMX1" and struct.unpack("<Q", head[40:48])[0]
    except OSError:
        return False


# --- The campaign --------------------------------------------------------------------------------

class Campaign:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.wafer = os.path.abspath(args.wafer)
        self.work = args.work or tempfile.mkdtemp(prefix="wafer-kill-")
        os.makedirs(self.work, exist_ok=True)
        self.env = dict(os.environ)
        home = os.path.join(self.work, "home")
        self.env.update(HOME=home, XDG_CACHE_HOME=os.path.join(self.work, "cache"),
                        XDG_DATA_HOME=os.path.join(home, "data"))
        self.env.pop("WAFER_TEST_KILL_AT", None)
        self.references = {}
        self.durations = {}
        self.kills = collections.Counter()      # (config, phase) -> kills
        self.resumes = collections.Counter()    # config -> resumes
        self.restarts = collections.Counter()   # config -> fresh starts after an early kill
        self.checks = collections.Counter()     # "passed"/"failed"
        self.failures = []
        self.total_kills = 0

    # -- running wafer
    def run(self, cmd, kill_at=None, delay=None, timeout=300):
        """Runs wafer; kills it with SIGKILL after `delay` s (or lets WAFER_TEST_KILL_AT do it).
        Returns (how it ended: 'finished' | 'killed' | 'failed', output)."""
        env = dict(self.env)
        if kill_at:
            env["WAFER_TEST_KILL_AT"] = kill_at
        log = tempfile.TemporaryFile(dir=self.work)
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + timeout
        killed_by_us = False
        while proc.poll() is None:
            if delay is not None and time.monotonic() >= self.started + delay:
                proc.send_signal(signal.SIGKILL)
                killed_by_us = True
                proc.wait()
                break
            if time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                log.seek(0)
                return "failed", "timed out\n" + log.read().decode(errors="replace")
            time.sleep(0.002)
        log.seek(0)
        out = log.read().decode(errors="replace")
        if proc.returncode == -signal.SIGKILL:
            return "killed", out
        if killed_by_us:
            return "killed", out
        return ("finished" if proc.returncode == 0 else "failed"), out

    def launch(self, cmd, kill_at=None, delay=None):
        self.started = time.monotonic()
        return self.run(cmd, kill_at, delay)

    # -- references
    def reference(self, config):
        if config in self.references:
            return self.references[config]
        work = os.path.join(self.work, f"ref-{config}")
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        db, model = os.path.join(work, "runs.sqlite"), os.path.join(work, "model")
        cmd = [self.wafer, "train", PRESET, "--db", db, "--max-steps", str(MAX_STEPS),
               "--set", f"runconfig.model_dir={model}"] + tiny_args(config, work)
        t0 = time.monotonic()
        how, out = self.launch(cmd)
        if how != "finished":
            sys.exit(f"the uninterrupted reference run of {config} failed:\n{out}")
        self.durations[config] = time.monotonic() - t0
        newest = max(checkpoint_folders(model).items())[1]
        self.references[config] = {
            "weights": tensors(os.path.join(model, "model.safetensors")),
            "optimizer": tensors(os.path.join(newest, "optimizer.safetensors")),
            "loss": loss_curve(db, 1),
        }
        return self.references[config]

    def sweep_reference(self):
        if "sweep" in self.references:
            return self.references["sweep"]
        work = os.path.join(self.work, "ref-sweep")
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        db = os.path.join(work, "runs.sqlite")
        t0 = time.monotonic()
        how, out = self.launch(self.sweep_cmd(work, db))
        if how != "finished":
            sys.exit(f"the uninterrupted reference sweep failed:\n{out}")
        self.durations["sweep"] = time.monotonic() - t0
        self.references["sweep"] = self.sweep_results(db)
        return self.references["sweep"]

    def sweep_cmd(self, work, db):
        path = os.path.join(work, "sweep.yaml")
        with open(path, "w") as f:
            f.write(f"sweep:\n  base: {PRESET}\n  max_steps: {SWEEP_STEPS}\n  parameters:\n"
                    f"    optimizer.learning_rate: {json.dumps(SWEEP_LRS)}\n")
        args = tiny_args("ram-1-fp32", work)
        args += ["--set", "runconfig.max_checkpoints=0", "--set", "runconfig.checkpoint_steps=0",
                 "--set", "runconfig.save_initial_checkpoint=false"]
        return [self.wafer, "sweep", path, "--db", db, "--yes"] + args

    def sweep_results(self, db):
        """learning rate -> (status, loss curve, tensors) of every finished trial."""
        out = {}
        rows = query(db, "SELECT id, status, model_dir, config_yaml FROM runs "
                         "WHERE kind = 'sweep-trial' ORDER BY id")
        for run, status, model_dir, yaml in rows:
            lr = None
            for line in yaml.splitlines():
                if line.strip().startswith("learning_rate:"):
                    lr = line.split(":", 1)[1].strip()
            if status != "finished":
                continue
            weights = os.path.join(model_dir, "model.safetensors")
            out[lr] = (loss_curve(db, run), tensors(weights) if os.path.exists(weights) else None)
        return out

    # -- checks
    def check(self, ok, what, trial):
        if ok:
            self.checks["passed"] += 1
        else:
            self.checks["failed"] += 1
            self.failures.append(f"{trial}: {what}")
            print(f"  FAIL {trial}: {what}", flush=True)

    def after_kill_checks(self, trial, db, model_dir):
        state = integrity(db)
        self.check(state in (None, "ok"), f"store integrity_check after a kill: {state}", trial)
        problems = incomplete_checkpoints(model_dir) if model_dir else []
        self.check(not problems, "checkpoint folder neither complete nor absent after a kill: "
                   + "; ".join(problems), trial)

    def no_run_running(self, trial, db):
        listed = subprocess.run([self.wafer, "runs", "list", "--json", "--db", db],
                                capture_output=True, text=True, env=self.env)
        running = [line for line in listed.stdout.splitlines()
                   if '"status":"running"' in line or '"status":"paused"' in line]
        self.check(listed.returncode == 0 and not running,
                   f"`wafer runs list` shows a run still running: {running or listed.stderr}",
                   trial)

    def final_checks(self, trial, config, db, model_dir):
        ref = self.reference(config)
        self.check(integrity(db) == "ok", f"store integrity_check: {integrity(db)}", trial)
        self.no_run_running(trial, db)
        runs = query(db, "SELECT id, status FROM runs WHERE model_dir = ? ORDER BY id", model_dir)
        finished = [r for r, s in runs if s == "finished"]
        self.check(len(finished) == 1, f"expected one finished run in {model_dir}: {runs}", trial)
        run = finished[-1] if finished else (runs[-1][0] if runs else -1)
        weights = os.path.join(model_dir, "model.safetensors")
        self.check(os.path.exists(weights) and tensors(weights) == ref["weights"],
                   "final weights differ from the uninterrupted run's", trial)
        folders = checkpoint_folders(model_dir)
        newest = folders.get(MAX_STEPS)
        self.check(newest is not None and
                   tensors(os.path.join(newest, "optimizer.safetensors")) == ref["optimizer"],
                   f"checkpoint-{MAX_STEPS} optimizer state differs from the uninterrupted run's",
                   trial)
        problems = incomplete_checkpoints(model_dir)
        self.check(not problems, "incomplete checkpoint folder: " + "; ".join(problems), trial)
        # The store's checkpoint rows name exactly the folders on disk, with their checksums.
        rows = query(db, "SELECT step, path, sha256 FROM checkpoints WHERE run = ?", run)
        recorded = collections.defaultdict(dict)
        for step, path, digest in rows:
            recorded[step][os.path.basename(path)] = (path, digest)
        bad = []
        for step, folder in folders.items():
            files = recorded.get(step, {})
            for name in CHECKPOINT_FILES:
                if name not in files:
                    bad.append(f"checkpoint-{step}/{name} has no row")
                elif files[name][1] != sha256(os.path.join(folder, name)):
                    bad.append(f"checkpoint-{step}/{name}: row's SHA-256 differs")
        for step in recorded:
            if step not in folders:
                bad.append(f"rows for checkpoint-{step}, which is not on disk")
        dup = query(db, "SELECT step, path, COUNT(*) FROM checkpoints WHERE run = ? "
                        "GROUP BY step, path HAVING COUNT(*) > 1", run)
        bad += [f"{c} rows for {p}" for _, p, c in dup]
        self.check(not bad, "store checkpoint rows vs folders: " + "; ".join(bad), trial)
        curve = loss_curve(db, run)
        self.check([s for s, _, _ in curve] == list(range(1, MAX_STEPS + 1)),
                   f"loss rows at steps {[s for s, _, _ in curve]}, expected 1..{MAX_STEPS} once",
                   trial)
        self.check(curve == ref["loss"], "loss curve differs from the uninterrupted run's", trial)
        left = leftovers(model_dir)
        self.check(not left, f"partial files left behind: {left}", trial)

    # -- trials
    def pick_kill(self, config, remaining_fraction):
        """(kill_at, delay, phase label) of the next attempt."""
        if self.rng.random() < 0.5:
            point = self.rng.choice(sorted(HOOKS))
            most = max(1, int(HOOKS[point] * remaining_fraction))
            return f"{point}:{self.rng.randint(1, most)}", None, point
        span = self.durations[config] * max(remaining_fraction, 0.2)
        return None, self.rng.uniform(0.0, span * 1.1), None

    def landing(self, phase, model_dir, mx_path):
        """Where a timed kill landed, read from what it left."""
        if phase:
            return phase
        if mx_path and memoryx_journal_valid(mx_path):
            return "timed: memoryx-update"
        if any(n.startswith(".checkpoint-") for n in os.listdir(model_dir)) \
                if os.path.isdir(model_dir) else False:
            return "timed: checkpoint-write"
        if any(".tmp-" in n for n in os.listdir(model_dir)) if os.path.isdir(model_dir) else False:
            return "timed: file-write"
        if not checkpoint_folders(model_dir):
            return "timed: startup"
        return "timed: step"

    def train_trial(self, index, config, kills_wanted):
        trial = f"trial {index} ({config})"
        self.reference(config)
        work = os.path.join(self.work, f"trial-{index}")
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        db, model = os.path.join(work, "runs.sqlite"), os.path.join(work, "model")
        mx_path = os.path.join(work, "memoryx.bin") if config.startswith("file") else None
        fresh = [self.wafer, "train", PRESET, "--db", db, "--max-steps", str(MAX_STEPS),
                 "--set", f"runconfig.model_dir={model}"] + tiny_args(config, work)
        resume = [self.wafer, "train", "--resume", model, "--db", db]
        kills, attempts = 0, 0
        while True:
            attempts += 1
            if attempts > kills_wanted * 4 + 10:
                self.check(False, "too many attempts without finishing", trial)
                return kills
            started = bool(checkpoint_folders(model))
            cmd = resume if started else fresh
            if attempts > 1:
                if started:
                    self.resumes[config] += 1
                else:
                    self.restarts[config] += 1
            done = max(checkpoint_folders(model) or [0])
            fraction = (MAX_STEPS - done) / MAX_STEPS
            kill_at, delay, phase = (None, None, None)
            if kills < kills_wanted:
                kill_at, delay, phase = self.pick_kill(config, fraction)
            how, out = self.launch(cmd, kill_at, delay)
            if how == "killed":
                kills += 1
                where = self.landing(phase, model, mx_path)
                self.kills[(config, where)] += 1
                self.after_kill_checks(trial, db, model)
                continue
            if how == "failed":
                self.check(False, f"wafer exited with an error:\n{out[-3000:]}", trial)
                return kills
            break
        self.final_checks(trial, config, db, model)
        if not self.args.keep and not self.failures:
            shutil.rmtree(work, ignore_errors=True)
        return kills

    def sweep_trial(self, index, kills_wanted):
        trial = f"trial {index} (sweep)"
        ref = self.sweep_reference()
        work = os.path.join(self.work, f"trial-{index}")
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        db = os.path.join(work, "runs.sqlite")
        fresh = self.sweep_cmd(work, db)
        kills, attempts = 0, 0
        while True:
            attempts += 1
            if attempts > kills_wanted * 4 + 10:
                self.check(False, "too many attempts without finishing", trial)
                return kills
            sweeps = query(db, "SELECT id FROM runs WHERE kind = 'sweep'")
            if sweeps:
                cmd = [self.wafer, "sweep", "--resume", str(sweeps[0][0]), "--db", db, "--yes"]
            else:
                cmd = fresh
            if attempts > 1:
                if sweeps:
                    self.resumes["sweep"] += 1
                else:
                    self.restarts["sweep"] += 1
            kill_at, delay, phase = (None, None, None)
            if kills < kills_wanted:
                if self.rng.random() < 0.5:
                    point = self.rng.choice(["step-end", "memoryx-update", "atomic-commit",
                                             "store-commit"])
                    most = {"step-end": SWEEP_STEPS, "memoryx-update": SWEEP_STEPS * 4,
                            "atomic-commit": 2, "store-commit": 20}[point]
                    kill_at, phase = f"{point}:{self.rng.randint(1, most)}", point
                else:
                    delay = self.rng.uniform(0.0, self.durations["sweep"] * 1.1)
            how, out = self.launch(cmd, kill_at, delay)
            if how == "killed":
                kills += 1
                self.kills[("sweep", phase or "timed")] += 1
                self.after_kill_checks(trial, db, None)
                continue
            if how == "failed":
                self.check(False, f"wafer sweep exited with an error:\n{out[-3000:]}", trial)
                return kills
            break
        self.check(integrity(db) == "ok", f"store integrity_check: {integrity(db)}", trial)
        self.no_run_running(trial, db)
        status = query(db, "SELECT status FROM runs WHERE kind = 'sweep'")
        self.check(status == [("finished",)], f"sweep status {status}, expected finished", trial)
        got = self.sweep_results(db)
        self.check(sorted(got) == sorted(ref), f"finished trials {sorted(got)} vs {sorted(ref)}",
                   trial)
        for lr, (curve, weights) in ref.items():
            if lr in got:
                self.check(got[lr][0] == curve, f"sweep trial lr {lr}: loss curve differs", trial)
                self.check(got[lr][1] == weights, f"sweep trial lr {lr}: weights differ", trial)
        if not self.args.keep and not self.failures:
            shutil.rmtree(work, ignore_errors=True)
        return kills

    def go(self):
        configs = self.args.configs.split(",")
        for c in configs:
            if c not in CONFIGS and c != "sweep":
                sys.exit(f"--configs: unknown configuration {c} (known: {', '.join(CONFIGS)}, "
                         "sweep)")
        print(f"kill campaign: seed {self.args.seed}, {self.args.kills} kills over "
              f"{', '.join(configs)}; work folder {self.work}", flush=True)
        t0 = time.monotonic()
        index = 0
        while self.total_kills < self.args.kills:
            config = configs[index % len(configs)]
            index += 1
            wanted = min(self.rng.randint(2, 5), self.args.kills - self.total_kills)
            if config == "sweep":
                got = self.sweep_trial(index, wanted)
            else:
                got = self.train_trial(index, config, wanted)
            self.total_kills += got
            print(f"trial {index:3d} {config:12s} {got} kills; total {self.total_kills}; "
                  f"checks {self.checks['passed']} passed, {self.checks['failed']} failed "
                  f"({time.monotonic() - t0:.0f} s)", flush=True)
        self.report(time.monotonic() - t0)
        return 0 if not self.failures else 1

    def report(self, seconds):
        phases = sorted({p for _, p in self.kills})
        configs = sorted({c for c, _ in self.kills})
        width = max([len(p) for p in phases] + [10])
        print(f"\nkills by configuration and where they landed (seed {self.args.seed}, "
              f"{seconds:.0f} s):")
        print(" " * width + "".join(f"{c:>12s}" for c in configs) + f"{'total':>8s}")
        for p in phases:
            row = [self.kills[(c, p)] for c in configs]
            print(f"{p:<{width}s}" + "".join(f"{n:12d}" for n in row) + f"{sum(row):8d}")
        totals = [sum(self.kills[(c, p)] for p in phases) for c in configs]
        print(f"{'kills':<{width}s}" + "".join(f"{n:12d}" for n in totals) + f"{sum(totals):8d}")
        row = [self.resumes[c] for c in configs]
        print(f"{'resumes':<{width}s}" + "".join(f"{n:12d}" for n in row) + f"{sum(row):8d}")
        row = [self.restarts[c] for c in configs]
        print(f"{'restarts':<{width}s}" + "".join(f"{n:12d}" for n in row) + f"{sum(row):8d}")
        print("(restarts: killed before the first checkpoint existed, so started again)")
        print(f"checks: {self.checks['passed']} passed, {self.checks['failed']} failed")
        for failure in self.failures:
            print("FAILED " + failure.splitlines()[0])
        print(f"seed {self.args.seed}; work folder {self.work}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=120, help="kills to make in all (default 120)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: random)")
    parser.add_argument("--configs", default=",".join(CONFIGS + ["sweep"]),
                        help="comma-separated: ram|file-1|4-fp32|bf16, and sweep")
    parser.add_argument("--wafer", default=os.path.join(ROOT, "build", "app", "wafer"))
    parser.add_argument("--work", default=None, help="working folder (default: a temp folder)")
    parser.add_argument("--keep", action="store_true", help="keep every trial's folder")
    args = parser.parse_args()
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1 << 31)
    if not os.access(args.wafer, os.X_OK):
        sys.exit(f"no wafer binary at {args.wafer} (--wafer)")
    campaign = Campaign(args)
    code = campaign.go()
    if not args.keep and code == 0 and not args.work:
        shutil.rmtree(campaign.work, ignore_errors=True)
    sys.exit(code)


if __name__ == "__main__":
    main()
