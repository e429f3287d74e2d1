# SPDX-License-Identifier: GPL-3.0-or-later
# Shared by the shell tests (tests/app/cli_test.sh, tests/app/reliability_test.sh,
# tests/installer/package_test.sh): sourced after the script sets $case_name.

fail() { echo "FAIL [$case_name]: $*" >&2; exit 1; }
expect_in() { grep -q -- "$1" <<<"$2" || fail "expected '$1' in output:
$2"; }

# Two safetensors files hold the same tensors (names, dtypes, shapes, bytes), metadata aside
# (it names each run's own model_dir); read by an independent reader, Python's standard library.
same_tensors() {
  python3 - "$1" "$2" <<'PY' || fail "$1 and $2 hold different tensors"
import json, struct, sys
def load(path):
  data = open(path, "rb").read()
  (n,) = struct.unpack("<Q", data[:8])
  header = json.loads(data[8:8 + n])
  header.pop("__metadata__", None)
  body = data[8 + n:]
  return {k: (v["dtype"], v["shape"], body[v["data_offsets"][0]:v["data_offsets"][1]])
          for k, v in header.items()}
a, b = load(sys.argv[1]), load(sys.argv[2])
sys.exit(0 if a == b and len(a) > 0 else 1)
PY
}

# The small sweep the cross-process tests run against one process: 2 widths x the learning
# rates (default: 2^-9 .. 2^-6, four trials each width), two trials at a time.
# write_small_sweep FILE BASE_CONFIG MAX_STEPS [LEARNING_RATES]
write_small_sweep() {
  cat >"$1" <<EOF2
sweep:
  base: $2
  max_steps: $3
  parallel_trials: 2
  parameters:
    model.hidden_size: {values: [16, 32], with: {model.filter_size: [32, 64]}}
    optimizer.learning_rate: ${4:-"{log2_range: {min: -9, max: -6, step: 1}}"}
EOF2
}

# What a sweep's store records that must not differ between placements (sweep_store_dump.py).
sweep_dump() { python3 "$(dirname "${BASH_SOURCE[0]}")/../app/sweep_store_dump.py" "$1" || fail "cannot read $1"; }
