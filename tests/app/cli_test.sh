#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# CLI smoke tests: runs the real `wafer` binary the way a user does and checks exit codes and
# output. Usage: cli_test.sh WAFER_BINARY SOURCE_DIR CASE
set -uo pipefail
wafer=$1
src=$2
case_name=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME="$tmp/home" XDG_CACHE_HOME="$tmp/cache" XDG_DATA_HOME="$tmp/data"
db="$tmp/runs.sqlite"

. "$(dirname "${BASH_SOURCE[0]}")/../support/test_helpers.sh"  # fail, expect_in, same_tensors

# A tiny, fast config over the bundled corpus.
tiny_args=(--set model.hidden_size=32 --set model.num_hidden_layers=1 --set model.num_heads=2
           --set model.filter_size=64 --set train_input.max_sequence_length=32
           --set train_input.batch_size=2 --set eval_input.batch_size=2
           --set runconfig.eval_frequency=2 --set runconfig.eval_steps=1 --set runconfig.log_steps=1)

case "$case_name" in
version)
  out=$("$wafer" --version) || fail "exit $?"
  expect_in "wafer 0." "$out"
  # The revision is the source tree's as built now (read at every build, not at configure time).
  if head=$(git -C "$src" rev-parse --short=7 HEAD 2>/dev/null); then
    expect_in "wafer 0\.[0-9.]* ($head" "$out"
  fi
  # Run from the build tree, it finds the data through the build's share folder (linked to the
  # sources by CMake), not through a path compiled in.
  expect_in "presets and resources: $(cd "$(dirname "$wafer")/.." && pwd -P)/share/wafer-studio (build tree)" "$out"
  expect_in "run store: " "$out" ;;
studio_help_without_display)
  # wafer-studio answers --help, --version and usage errors with no display at all.
  studio="$(dirname "$wafer")/wafer-studio"
  [[ -x "$studio" ]] || { echo "no wafer-studio in this build: skipped"; exit 0; }
  nodisplay=(env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM)
  out=$("${nodisplay[@]}" "$studio" --version 2>&1) || fail "--version: exit $? $out"
  expect_in "wafer-studio 0." "$out"
  out=$("${nodisplay[@]}" "$studio" --help 2>&1) || fail "--help: exit $? $out"
  expect_in "--open-run" "$out"
  out=$("${nodisplay[@]}" "$studio" --no-such-flag 2>&1); code=$?
  [[ $code -eq 2 ]] || fail "expected exit 2 for a bad flag, got $code: $out"
  expect_in "no-such-flag" "$out" ;;
store_recover)
  # A damaged store is refused by every command with the routes back; `wafer store recover`
  # salvages it and keeps the damaged file.
  db="$tmp/runs.sqlite"
  "$wafer" train "$src/presets/gpt-nano.yaml" --max-steps 2 --db "$db" --name keepme \
      "${tiny_args[@]}" >/dev/null 2>&1 || fail "train exit $?"
  printf 'garbage garbage!' | dd of="$db" bs=1 seek=0 conv=notrunc status=none
  out=$("$wafer" runs list --db "$db" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "runs list on a damaged store: expected exit 1, got $code: $out"
  expect_in "is damaged" "$out"
  expect_in "wafer store recover --db $db" "$out"
  out=$("$wafer" store check --db "$db" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "store check: expected exit 1, got $code: $out"
  out=$("$wafer" store recover --db "$db" 2>&1) || fail "store recover: exit $? $out"
  expect_in "1 run," "$out"
  ls "$tmp" | grep -q '^runs.sqlite.damaged-' || fail "the damaged file was not kept: $(ls "$tmp")"
  out=$("$wafer" runs list --db "$db" 2>&1) || fail "runs list after recovery: exit $? $out"
  expect_in "keepme" "$out"
  out=$("$wafer" store check --db "$db" 2>&1) || fail "store check after recovery: exit $? $out"
  expect_in "healthy" "$out" ;;
store_unrecoverable)
  # Issue 31: a store that salvage cannot read and that has no backup. Every command names only
  # the routes that exist (never the backup); salvage fails saying so and leaves the file; a
  # fresh store keeps the damaged file beside it.
  "$wafer" train "$src/presets/gpt-nano.yaml" --max-steps 2 --db "$db" --name gone \
      "${tiny_args[@]}" >/dev/null 2>&1 || fail "train exit $?"
  [[ ! -e "$db.backup" ]] || fail "a store opened once while empty has no backup"
  size=$(stat -c %s "$db")
  head -c "$size" /dev/zero | tr '\0' 'Z' | dd of="$db" conv=notrunc status=none
  before=$(sha256sum <"$db")
  for cmd in "runs list" "store check"; do
    out=$("$wafer" $cmd --db "$db" 2>&1); code=$?
    [[ $code -eq 1 ]] || fail "$cmd: expected exit 1, got $code: $out"
    expect_in "wafer store recover --db $db --fresh" "$out"
    grep -q -- "backup" <<<"$out" && fail "$cmd names a backup that does not exist: $out"
  done
  out=$("$wafer" store recover --db "$db" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "salvage: expected exit 1, got $code: $out"
  expect_in "Salvage failed: " "$out"
  expect_in "Nothing was changed: the damaged file is still at $db" "$out"
  expect_in "There is no backup to restore" "$out"
  grep -qi -- "restore the\|--from-backup" <<<"$out" && fail "salvage offers a backup: $out"
  out=$("$wafer" store recover --db "$db" --from-backup 2>&1) && fail "from a missing backup: $out"
  expect_in "there is no backup" "$out"
  [[ "$(sha256sum <"$db")" == "$before" ]] || fail "a failed recovery changed the store"
  out=$("$wafer" store recover --db "$db" --fresh --from-backup 2>&1) && fail "both: $out"
  out=$("$wafer" store recover --db "$db" --fresh 2>&1) || fail "fresh: exit $? $out"
  expect_in "it is kept at $db.damaged-" "$out"
  kept=$(ls "$tmp" | grep '^runs.sqlite.damaged-' | head -1)
  [[ -n "$kept" && "$(sha256sum <"$tmp/$kept")" == "$before" ]] || fail "the damaged file was not kept"
  out=$("$wafer" runs list --db "$db" 2>&1) || fail "runs list on the fresh store: exit $? $out"
  out=$("$wafer" store check --db "$db" 2>&1) || fail "store check: exit $? $out" ;;
help)
  out=$("$wafer" --help) || fail "exit $?"
  for word in train validate runs; do expect_in "$word" "$out"; done ;;
usage_error)
  out=$("$wafer" train "$src/presets/gpt-nano.yaml" --no-such-flag 2>&1); code=$?
  [[ $code -eq 2 ]] || fail "expected exit 2 for a bad flag, got $code"
  expect_in "no-such-flag" "$out" ;;
missing_config)
  out=$("$wafer" train "$tmp/nope.yaml" 2>&1); code=$?
  [[ $code -eq 2 ]] || fail "expected exit 2, got $code"
  expect_in "nope.yaml" "$out" ;;
validate_presets)
  for preset in "$src"/presets/*.yaml; do
    out=$("$wafer" validate "$preset" --json) || fail "$preset: exit $? $out"
    expect_in '"valid":true' "$out"
    expect_in '"parameters":' "$out"
  done
  out=$("$wafer" validate "$src/presets/gpt-nano.yaml") || fail "exit $?"
  expect_in "parameters" "$out"
  expect_in "FLOPs per token" "$out" ;;
validate_bf16_streaming)
  # Issue 14: in bf16 mode weights stream as 2-byte bf16, so the wafer buffer and the bytes a pass
  # streams in are half the fp32 figures.
  field() { sed -E "s/.*\"$1\":([0-9]+).*/\1/" <<<"$2"; }
  fp32=$("$wafer" validate "$src/presets/gpt-micro.yaml" --json) || fail "exit $? $fp32"
  bf16=$("$wafer" validate "$src/presets/gpt-micro.yaml" --json --set model.mixed_precision=true \
         --set model.fp16_type=bfloat16) || fail "exit $? $bf16"
  expect_in '"stream_bytes_per_weight":4' "$fp32"
  expect_in '"stream_bytes_per_weight":2' "$bf16"
  for f in wafer_buffer_bytes streamed_bytes_per_pass; do
    a=$(field $f "$fp32"); b=$(field $f "$bf16")
    [[ -n "$b" && "$b" -gt 0 && "$a" -eq $((2 * b)) ]] || fail "$f: fp32 $a, bf16 $b"
  done
  out=$("$wafer" validate "$src/presets/gpt-micro.yaml" --set model.mixed_precision=true \
        --set model.fp16_type=bfloat16) || fail "exit $? $out"
  expect_in "weights as bf16 (2 bytes each): wafer buffer" "$out" ;;
validate_lora)
  # Issue 16: lora: is shown with its adapter count; 6 blocks x rank 4 x (c_attn 256+768 +
  # c_fc 256+1024) = 55296.
  out=$("$wafer" validate "$src/presets/gpt-micro.yaml" --json --set lora.rank=4 \
        --set "lora.targets=[c_attn, c_fc]") || fail "exit $? $out"
  expect_in '"adapter_parameters":55296' "$out"
  expect_in '"c_attn","c_fc"' "$out"
  out=$("$wafer" validate "$src/presets/gpt-micro.yaml" --set lora.rank=4) || fail "exit $? $out"
  expect_in "lora        rank 4, alpha 16 (scale 4), dropout 0 on c_attn: 24576 adapter" "$out"
  # The method, what trains and the emulated step (with h.0's adapter products) beside a full
  # fine-tune's.
  expect_in "method      LoRA: the base is frozen; 24576 of " "$out"
  expect_in "a full fine-tune of the same model: " "$out"
  expect_in "h.0 forward: qkv.lora_A " "$out"
  expect_in "h.0 backward: qkv.lora_B.dW " "$out"
  out=$("$wafer" validate "$src/presets/gpt-micro.yaml" --json --set lora.rank=4) || fail "$out"
  expect_in '"method":"lora"' "$out"
  expect_in '"trainable_parameters":24576' "$out"
  expect_in '"emulated_step_s":' "$out"
  expect_in '"emulated_full_finetune_step_s":' "$out"
  out=$("$wafer" predict "$src/presets/gpt-micro.yaml" --set lora.rank=4) || fail "$out"
  expect_in "lora         rank 4: the adapters' products take " "$out"
  out=$("$wafer" validate "$src/presets/gpt-micro.yaml" --set lora.rank=0 2>&1) && fail "rank 0 passed"
  expect_in "lora.rank: expected an integer >= 1" "$out"
  out=$("$wafer" validate "$src/presets/gpt-micro.yaml" --set "lora.targets=[qkv]" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "expected exit 1, got $code: $out"
  expect_in '"qkv": must be one of c_attn, attn.c_proj, c_fc, mlp.c_proj' "$out"
  out=$("$wafer" train "$src/presets/gpt-micro.yaml" --set lora.rank=4 --max-steps 2 \
        "${tiny_args[@]}" --db "$db" --set "runconfig.model_dir=$tmp/lora" 2>&1) \
    || fail "lora train exit $?: $out"
  expect_in "lora: rank 4, alpha 16 on c_attn: " "$out"
  expect_in "adapter parameters train" "$out"
  out=$("$wafer" export "$tmp/lora" --format hf --out "$tmp/lora-hf" 2>&1) && fail "exported: $out"
  expect_in "holds LoRA adapters (rank 4)" "$out"
  expect_in "add --merge" "$out"
  [[ ! -e $tmp/lora-hf ]] || fail "a refused export left $tmp/lora-hf" ;;
lora_peft)
  # Issue 16: a LoRA run's adapters out as a PEFT folder and back in onto its base bit for bit;
  # --merge writes W + alpha/r B A (checked by hf_tool.py, which shares no code with the engine);
  # LoRA runs and imported adapters sample.
  "$wafer" train "$src/presets/gpt-micro.yaml" --max-steps 2 "${tiny_args[@]}" --db "$db" \
      --set "runconfig.model_dir=$tmp/base" >/dev/null || fail "base train exit $?"
  "$wafer" train "$src/presets/gpt-micro.yaml" --max-steps 3 "${tiny_args[@]}" --db "$db" \
      --set lora.rank=4 --set "lora.targets=[c_attn, attn.c_proj, c_fc, mlp.c_proj]" \
      --set optimizer.learning_rate=0.05 \
      --set "runconfig.checkpoint_path=$tmp/base/model.safetensors" \
      --set "runconfig.model_dir=$tmp/lora" >/dev/null || fail "lora train exit $?"
  out=$("$wafer" sample "$tmp/lora" --prompt "The " --max-tokens 5 --seed 2 2>&1) \
      || fail "sample of a LoRA run exit $?: $out"
  expect_in "LoRA adapters (rank 4) merged into the weights for sampling" "$out"
  # --no-adapters samples the base: the same tokens as the base run itself.
  a=$("$wafer" sample "$tmp/lora" --no-adapters --prompt "The " --max-tokens 12 --seed 2 --json \
      | grep '"token"')
  b=$("$wafer" sample "$tmp/base" --prompt "The " --max-tokens 12 --seed 2 --json | grep '"token"')
  [[ -n "$a" && "$a" == "$b" ]] || fail "--no-adapters differs from the base"
  # Without --base-model: the base's name, not this machine's path to it; import finds it
  # again beside the adapter (as a shared adapter and its base are unpacked side by side).
  "$wafer" export "$tmp/lora" --format peft --out "$tmp/peft-portable" >/dev/null \
      || fail "portable peft export exit $?"
  grep -q '"base_model_name_or_path": *"base"' "$tmp/peft-portable/adapter_config.json" \
      || fail "base_model_name_or_path is not \"base\": $(cat "$tmp/peft-portable/adapter_config.json")"
  grep -q "$tmp" "$tmp/peft-portable/adapter_config.json" && fail "an absolute path in adapter_config.json"
  out=$("$wafer" import --adapter "$tmp/peft-portable" --out "$tmp/found-base" 2>&1) \
      || fail "import without a base exit $?: $out"
  expect_in "$tmp/base" "$out"
  out=$("$wafer" export "$tmp/lora" --format peft --out "$tmp/peft" --base-model gpt2-tiny) \
      || fail "peft export exit $?: $out"
  expect_in "rank 4, alpha 16, on c_attn, attn.c_proj, c_fc, mlp.c_proj" "$out"
  python3 - "$tmp/peft" <<'PY' || fail "not PEFT's layout"
import json, struct, sys
d = sys.argv[1]
c = json.load(open(d + "/adapter_config.json"))
assert c["peft_type"] == "LORA" and c["r"] == 4 and c["lora_alpha"] == 16, c
assert c["fan_in_fan_out"] is True and c["bias"] == "none" and c["task_type"] == "CAUSAL_LM", c
assert c["base_model_name_or_path"] == "gpt2-tiny", c
data = open(d + "/adapter_model.safetensors", "rb").read()
(n,) = struct.unpack("<Q", data[:8])
h = json.loads(data[8:8 + n])
p = "base_model.model.transformer.h.0."
assert h[p + "attn.c_attn.lora_A.weight"]["shape"] == [4, 32], h
assert h[p + "attn.c_attn.lora_B.weight"]["shape"] == [96, 4], h
assert h[p + "mlp.c_proj.lora_A.weight"]["shape"] == [4, 64], h
assert len([k for k in h if k != "__metadata__"]) == 8, h
PY
  out=$("$wafer" export "$tmp/lora" --merge --out "$tmp/merged") || fail "merge exit $?: $out"
  expect_in "LoRA adapters (rank 4) merged into the weights" "$out"
  /usr/bin/python3 "$src/tests/app/hf_tool.py" check-lora-merge "$tmp/peft" \
      "$tmp/lora/model.safetensors" "$tmp/merged/model.safetensors" || fail "merged export"
  out=$("$wafer" import "$tmp/base" --adapter "$tmp/peft" --out "$tmp/imported") \
      || fail "adapter import exit $?: $out"
  expect_in "imported LoRA adapter" "$out"
  same_tensors "$tmp/lora/model.safetensors" "$tmp/imported/model.safetensors"
  a=$("$wafer" sample "$tmp/lora" --prompt "The " --max-tokens 12 --seed 2 --json | grep '"token"')
  b=$("$wafer" sample "$tmp/imported" --prompt "The " --max-tokens 12 --seed 2 --json | grep '"token"')
  [[ -n "$a" && "$a" == "$b" ]] || fail "the imported adapters sample differently"
  # Fine-tuning the imported model continues its adapters (a step at learning rate 0 leaves them
  # as imported; fresh adapters would start at B = 0); new adapters on top are refused.
  for i in $(seq 1 60); do echo "LoRA adapters continue training where PEFT left them, line $i."; done \
    >"$tmp/new.txt"
  out=$("$wafer" finetune --base "$tmp/imported" --data "$tmp/new.txt" --lora 2 --dry-run 2>&1) \
      && fail "adapters on adapters: $out"
  expect_in "holds LoRA adapters already (rank 4)" "$out"
  out=$("$wafer" finetune --base "$tmp/imported" --data "$tmp/new.txt" --max-steps 1 --json \
        --db "$db" --set optimizer.learning_rate=0 --set "runconfig.model_dir=$tmp/continued") \
      || fail "finetune of imported adapters exit $?: $out"
  /usr/bin/python3 "$src/tests/app/hf_tool.py" same-values "$tmp/imported/model.safetensors" \
      "$tmp/continued/model.safetensors" --prefix h.0.attn.c_attn.lora_,h.0.mlp.c_proj.lora_ \
      || fail "the fine-tune did not start from the imported adapters"
  # A PEFT adapter for another base, and another PEFT method, are refused and write nothing.
  out=$("$wafer" import "$tmp/imported" --adapter "$tmp/peft" --out "$tmp/twice" 2>&1) \
      && fail "adapters on adapters: $out"
  expect_in "already holds LoRA adapters" "$out"
  sed -i 's/"LORA"/"IA3"/' "$tmp/peft/adapter_config.json"
  out=$("$wafer" import "$tmp/base" --adapter "$tmp/peft" --out "$tmp/ia3" 2>&1) && fail "IA3: $out"
  expect_in 'peft_type is "IA3"' "$out"
  [[ ! -e $tmp/ia3 && ! -e $tmp/twice ]] || fail "a refused import left a folder"
  out=$("$wafer" export "$tmp/base" --format peft --out "$tmp/none" 2>&1) && fail "no adapters: $out"
  expect_in "has no LoRA adapters" "$out" ;;
lora_peft_llama)
  # Issue 33: LoRA on a Llama's q_proj and v_proj (PEFT's usual choice) on llama-nano's blocks
  # (rotary, RMSNorm, SwiGLU, 4 heads sharing 2 KV heads): PEFT's Llama layout out and back in bit
  # for bit; --merge adds (alpha/r) B A to exactly q_proj's and v_proj's weights (checked with the
  # standard library from the exported files alone); a GPT-2 base refuses the adapter by family.
  llama=("${tiny_args[@]}" --set model.num_heads=4 --set model.extra_attention_params.num_kv_groups=2)
  "$wafer" train "$src/presets/llama-nano.yaml" --max-steps 2 "${llama[@]}" --db "$db" \
      --set "runconfig.model_dir=$tmp/base" >/dev/null || fail "base train exit $?"
  "$wafer" train "$src/presets/llama-nano.yaml" --max-steps 3 "${llama[@]}" --db "$db" \
      --set lora.rank=4 --set "lora.targets=[q_proj, v_proj]" --set optimizer.learning_rate=0.05 \
      --set "runconfig.checkpoint_path=$tmp/base/model.safetensors" \
      --set "runconfig.model_dir=$tmp/lora" >/dev/null || fail "lora train exit $?"
  out=$("$wafer" export "$tmp/lora" --format peft --out "$tmp/peft" --base-model llama-tiny) \
      || fail "peft export exit $?: $out"
  expect_in "rank 4, alpha 16, on q_proj, v_proj" "$out"
  "$wafer" export "$tmp/base" --format hf --out "$tmp/base-hf" >/dev/null || fail "base hf exit $?"
  out=$("$wafer" export "$tmp/lora" --merge --out "$tmp/merged") || fail "merge exit $?: $out"
  expect_in "LoRA adapters (rank 4) merged into the weights" "$out"
  python3 - "$tmp" <<'PY' || fail "not PEFT's Llama layout, or the merge is not W + (alpha/r) B A"
import json, struct, sys
t = sys.argv[1]
def read(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    h = json.loads(data[8:8 + n])
    out = {}
    for k, v in h.items():
        if k == "__metadata__":
            continue
        assert v["dtype"] == "F32", (k, v)
        b, e = v["data_offsets"]
        vals = struct.unpack("<%df" % ((e - b) // 4), data[8 + n + b:8 + n + e])
        out[k] = (v["shape"], vals)
    return out
c = json.load(open(t + "/peft/adapter_config.json"))
assert c["fan_in_fan_out"] is False and sorted(c["target_modules"]) == ["q_proj", "v_proj"], c
assert c["r"] == 4 and c["lora_alpha"] == 16, c
ad = read(t + "/peft/adapter_model.safetensors")
p = "base_model.model.model.layers.0.self_attn."
assert ad[p + "q_proj.lora_A.weight"][0] == [4, 32], ad[p + "q_proj.lora_A.weight"][0]
assert ad[p + "q_proj.lora_B.weight"][0] == [32, 4]
assert ad[p + "v_proj.lora_B.weight"][0] == [16, 4]  # 2 KV heads x 8
assert len(ad) == 4, sorted(ad)
base, merged = read(t + "/base-hf/model.safetensors"), read(t + "/merged/model.safetensors")
assert sorted(base) == sorted(merged)
scale, worst = 16 / 4, 0.0
for name, (shape, w) in base.items():
    m = merged[name][1]
    proj = name.split(".")[-2]
    if proj not in ("q_proj", "v_proj"):
        assert m == w, name + " changed"
        continue
    (_, A), (_, B) = ad["base_model.model." + name[:-7] + ".lora_A.weight"], \
        ad["base_model.model." + name[:-7] + ".lora_B.weight"]
    out, inp = shape
    for o in range(out):
        for i in range(inp):
            want = w[o * inp + i] + scale * sum(B[o * 4 + r] * A[r * inp + i] for r in range(4))
            worst = max(worst, abs(m[o * inp + i] - want))
assert worst < 1e-6, worst
print("merge: largest difference from W + (alpha/r) B A:", worst)
PY
  out=$("$wafer" import "$tmp/base" --adapter "$tmp/peft" --out "$tmp/imported") \
      || fail "adapter import exit $?: $out"
  same_tensors "$tmp/lora/model.safetensors" "$tmp/imported/model.safetensors"
  "$wafer" train "$src/presets/gpt-micro.yaml" --max-steps 1 "${tiny_args[@]}" --db "$db" \
      --set "runconfig.model_dir=$tmp/gpt2" >/dev/null || fail "gpt2 train exit $?"
  out=$("$wafer" import "$tmp/gpt2" --adapter "$tmp/peft" --out "$tmp/wrong" 2>&1) \
      && fail "a Llama adapter on GPT-2: $out"
  expect_in 'target module "q_proj" is not a GPT-2 linear' "$out"
  expect_in "it is a Llama module" "$out"
  [[ ! -e $tmp/wrong ]] || fail "a refused import left a folder" ;;
validate_typo)
  printf 'model:\n  hiden_size: 64\n' >"$tmp/typo.yaml"
  out=$("$wafer" validate "$tmp/typo.yaml" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "expected exit 1, got $code"
  expect_in "typo.yaml:2" "$out"
  expect_in "hidden_size" "$out" ;;
validate_inconsistent)
  out=$("$wafer" validate "$src/presets/gpt-nano.yaml" --set model.num_heads=5 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "expected exit 1, got $code"
  expect_in "num_heads" "$out" ;;
validate_data)
  # Issue 31: validate reads the data the config names as a run does: missing or binary data is
  # refused naming the key and the fix, in the words `wafer train` stops with.
  nano="$src/presets/gpt-nano.yaml"
  out=$("$wafer" validate "$nano" --set "train_input.data_dir=$tmp/nope" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "missing data: expected exit 1, got $code: $out"
  expect_in "train_input.data_dir: '$tmp/nope' does not exist" "$out"
  expect_in "name an existing text file or folder" "$out"
  out=$("$wafer" train "$nano" --max-steps 1 --db "$db" "${tiny_args[@]}" \
        --set "train_input.data_dir=$tmp/nope" 2>&1) && fail "train on missing data: $out"
  expect_in "train_input.data_dir: '$tmp/nope' does not exist" "$out"
  { printf '\177ELF\002\001\001'; head -c 200 /dev/zero; } >"$tmp/program"
  out=$("$wafer" validate "$nano" --set "train_input.data_dir=$tmp/program" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "binary data: expected exit 1, got $code: $out"
  expect_in "train_input.data_dir: '$tmp/program' looks like an ELF executable" "$out"
  expect_in "set train_input.allow_binary: true to train on it anyway" "$out"
  out=$("$wafer" validate "$nano" --set "train_input.data_dir=$tmp/program" \
        --set train_input.allow_binary=true) || fail "allow_binary: exit $? $out"
  expect_in ": valid" "$out"
  out=$("$wafer" validate "$nano" --set "eval_input.data_dir=[$tmp/nope]" --json); code=$?
  [[ $code -eq 1 ]] || fail "missing eval data: expected exit 1, got $code: $out"
  expect_in '"valid":false' "$out"
  expect_in "eval_input.data_dir: '$tmp/nope' does not exist" "$out"
  long="$tmp/$(printf 'x%.0s' {1..300})"
  out=$("$wafer" validate "$nano" --set "train_input.data_dir=$long" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "a path past 255 bytes: expected exit 1, got $code: $out"
  expect_in "cannot be read (File name too long)" "$out" ;;
train_hdf5)
  # Issue 34: a ModelZoo config's HDF5 data_dir (GptHDF5MapDataProcessor / GptHDF5DataProcessor
  # .h5 files, here written by h5py: tests/engine/data/make_hdf5_fixture.py) trains as written;
  # validate and train refuse the same problems in the same words.
  nano="$src/presets/gpt-nano.yaml"
  h5="$src/tests/engine/data/fixtures/hdf5"
  hdf5_args=(--set train_input.data_processor=GptHDF5MapDataProcessor
             --set "train_input.data_dir=$h5/full" --set train_input.batch_size=4
             --set eval_input.batch_size=2 --set train_input.validation_fraction=0.25
             --set runconfig.eval_frequency=10 --set runconfig.eval_steps=3
             --set runconfig.log_steps=10)
  out=$("$wafer" validate "$nano" "${hdf5_args[@]}" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "length mismatch: expected exit 1, got $code: $out"
  expect_in "train_input.max_sequence_length is 128" "$out"
  expect_in "set train_input.max_sequence_length: 12" "$out"
  out=$("$wafer" train "$nano" --max-steps 1 --db "$db" "${hdf5_args[@]}" 2>&1) \
      && fail "train with the wrong length: $out"
  expect_in "set train_input.max_sequence_length: 12" "$out"
  hdf5_args+=(--set train_input.max_sequence_length=12)
  out=$("$wafer" validate "$nano" "${hdf5_args[@]}" 2>&1) || fail "validate: exit $? $out"
  expect_in ": valid" "$out"
  out=$("$wafer" train "$nano" --max-steps 30 --db "$db" "${hdf5_args[@]}" 2>&1) \
      || fail "train: exit $? $out"
  expect_in "HDF5 samples: 2 file(s), 24 samples of 12 tokens" "$out"
  expect_in "18 train, 6 held out" "$out"
  # Every row counts up by one: 30 steps learn much of it, on the held-out samples too.
  first=$(sed -n 's/^step 10\/30 | loss \([0-9.]*\) | eval \([0-9.]*\).*/\1 \2/p' <<<"$out")
  last=$(sed -n 's/^step 30\/30 | loss \([0-9.]*\) | eval \([0-9.]*\).*/\1 \2/p' <<<"$out")
  [[ -n $first && -n $last ]] || fail "no loss and eval lines at steps 10 and 30: $out"
  python3 -c 'import sys; a=sys.argv[1].split(); b=sys.argv[2].split(); sys.exit(not (float(b[0]) < float(a[0]) / 2 and float(b[1]) < float(a[1]) / 2))' \
      "$first" "$last" || fail "loss and eval did not halve from step 10 ($first) to 30 ($last)"
  # Packed rows (use_vsl): the files' position_ids keep attention inside each document.
  out=$("$wafer" train "$nano" --max-steps 30 --db "$db" "${hdf5_args[@]}" --set train_input.use_vsl=true \
        --set "train_input.data_dir=$h5/vslfull" --set eval_input.batch_size=3 2>&1) || fail "vsl: exit $? $out"
  expect_in "12 samples of 12 tokens (5 rows: input_ids, loss mask, labels, attention_span, position_ids); 9 train, 3 held out" "$out"
  last=$(sed -n 's/^step 30\/30 | loss \([0-9.]*\) | eval \([0-9.]*\).*/\1/p' <<<"$out")
  python3 -c 'import sys; sys.exit(not float(sys.argv[1]) < 2.0)' "$last" || fail "vsl: loss $last at step 30: $out"
  out=$("$wafer" validate "$nano" "${hdf5_args[@]}" --set train_input.use_vsl=true 2>&1) && fail "vsl on full/: $out"
  expect_in "without the attention_span and position_ids rows" "$out"
  # The GptHDF5DataProcessor reads the same files.
  out=$("$wafer" train "$nano" --max-steps 2 --db "$db" "${hdf5_args[@]}" \
        --set train_input.data_processor=GptHDF5DataProcessor 2>&1) || fail "iterable: exit $? $out"
  # Text where .h5 files are expected, and a file that is not HDF5.
  out=$("$wafer" validate "$nano" "${hdf5_args[@]}" --set "train_input.data_dir=$src/resources/corpus" 2>&1) \
      && fail "text folder: $out"
  expect_in "holds no .h5 files" "$out"
  mkdir -p "$tmp/bad" && echo "text" >"$tmp/bad/examples_0.h5"
  out=$("$wafer" train "$nano" --max-steps 1 --db "$db" "${hdf5_args[@]}" --set "train_input.data_dir=$tmp/bad" 2>&1) \
      && fail "not HDF5: $out"
  expect_in "train_input.data_dir: '$tmp/bad/examples_0.h5' is not an HDF5 file" "$out"
  grep -q "HDF5-DIAG" <<<"$out" && fail "HDF5 printed its error stack: $out"
  # Samples with a loss mask of 0 (prompts, padding) train: the loss skips the masked positions.
  out=$("$wafer" train "$nano" --max-steps 2 --db "$db" "${hdf5_args[@]}" --set "train_input.data_dir=$h5/plain" 2>&1) \
      || fail "masked samples: exit $? $out"
  expect_in "finished after 2 steps" "$out" ;;
train_and_runs)
  out=$("$wafer" train "$src/presets/gpt-nano.yaml" --max-steps 4 --json --db "$db" \
        --name smoke "${tiny_args[@]}" --set "runconfig.model_dir=$tmp/model") || fail "train exit $? $out"
  expect_in '"event":"step"' "$out"
  expect_in '"eval_loss":' "$out"
  expect_in '"tokens_per_s":' "$out"
  expect_in '"status":"finished"' "$out"
  [[ -s "$tmp/model/model.safetensors" ]] || fail "no model.safetensors written"
  [[ $(grep -c '"event":"step"' <<<"$out") -eq 4 ]] || fail "expected 4 step lines: $out"
  list=$("$wafer" runs list --json --db "$db") || fail "runs list exit $?"
  expect_in '"name":"smoke"' "$list"
  id=$(sed -E 's/.*"id":([0-9]+).*/\1/' <<<"$list" | head -1)
  show=$("$wafer" runs show "$id" --db "$db") || fail "runs show exit $?"
  expect_in "finished" "$show"
  expect_in "hidden_size: 32" "$show"
  "$wafer" runs delete "$id" --db "$db" >/dev/null || fail "runs delete exit $?"
  list=$("$wafer" runs list --db "$db") || fail "runs list exit $?"
  expect_in "no runs yet" "$list"
  out=$("$wafer" runs show 999 --db "$db" 2>&1) && fail "showing a missing run must fail"
  expect_in "999" "$out" ;;
train_text)
  out=$("$wafer" train "$src/presets/gpt-nano.yaml" --max-steps 2 --db "$db" "${tiny_args[@]}" \
        --set "runconfig.model_dir=$tmp/model" 2>&1) || fail "exit $? $out"
  expect_in "step 2/2" "$out"
  expect_in "finished after 2 steps" "$out" ;;
sigint)
  # Ctrl-C stops after the current step: exit 0, status "stopped", weights and metrics kept.
  "$wafer" train "$src/presets/gpt-nano.yaml" --json --db "$db" "${tiny_args[@]}" \
      --max-steps 1000000 --set "runconfig.model_dir=$tmp/model" >"$tmp/out.jsonl" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do
    grep -q '"event":"step"' "$tmp/out.jsonl" 2>/dev/null && break
    sleep 0.1
  done
  grep -q '"event":"step"' "$tmp/out.jsonl" || { kill -9 $pid; fail "no step within 60 s"; }
  kill -INT $pid
  wait $pid; code=$?
  [[ $code -eq 0 ]] || fail "expected exit 0 after Ctrl-C, got $code: $(cat "$tmp/out.jsonl")"
  expect_in '"status":"stopped"' "$(cat "$tmp/out.jsonl")"
  [[ -s "$tmp/model/model.safetensors" ]] || fail "no weights after a stop"
  list=$("$wafer" runs list --json --db "$db")
  expect_in '"status":"stopped"' "$list" ;;
run_control|mpi_run_control)
  # `wafer runs control RUN ACTION` on a real `wafer train` child (one process, and rank 0 of
  # `mpirun -np 2`): pause between layers shows "paused" in the store, checkpoint now writes a
  # checkpoint once continued, stop ends the job cleanly with a final checkpoint. The studio's
  # Pause / Checkpoint Now / Stop on a run it did not start are these requests.
  launch=("$wafer")
  run_args=("${tiny_args[@]}" --set runconfig.log_steps=1000 --set runconfig.eval_frequency=0
            --max-steps 1000000 --threads 1 --set "runconfig.model_dir=$tmp/m")
  if [[ $case_name == mpi_run_control ]]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    launch=("${WAFER_MPIEXEC:-mpirun}" --oversubscribe -np 2 --bind-to none "$wafer")
    run_args+=(--set runconfig.num_csx=2 --set train_input.batch_size=4)
  fi
  "${launch[@]}" train "$src/presets/gpt-nano.yaml" --db "$db" "${run_args[@]}" >"$tmp/train.log" 2>&1 &
  job=$!
  status_is() { "$wafer" runs list --json --db "$db" 2>/dev/null | grep -q "\"status\":\"$1\""; }
  wait_for() {  # wait_for WHAT COMMAND...: up to 60 s
    local what=$1; shift
    for _ in $(seq 1 600); do "$@" && return 0; sleep 0.1; done
    kill -9 $job; fail "no $what within 60 s: $(cat "$tmp/train.log")"
  }
  wait_for "running run" status_is running
  out=$("$wafer" runs control 1 halt --db "$db" 2>&1) && fail "an unknown action was accepted"
  expect_in "pause, continue, step-layer, checkpoint or stop" "$out"
  out=$("$wafer" runs control 1 pause --db "$db" 2>&1) || fail "pause: exit $?: $out"
  expect_in "asked run 1 to pause" "$out"
  wait_for "paused status" status_is paused
  grep -q "paused between layers" "$tmp/train.log" || fail "the run did not say it paused"
  # A paused run has no summary yet: the list shows its last recorded step and loss, not "-".
  row=$("$wafer" runs list --db "$db" | awk '$1 == 1 {print $(NF-2), $(NF-1)}')
  [[ $row =~ ^[0-9]+\ [0-9.e+-]+$ ]] || fail "runs list shows no step and loss for the paused run: '$row'"
  expect_in '"last_recorded":{"loss":' "$("$wafer" runs list --json --db "$db")"
  "$wafer" runs control 1 checkpoint --db "$db" >/dev/null || fail "checkpoint: exit $?"
  sleep 1  # paused: the checkpoint waits for the step in flight
  ls "$tmp/m" | grep -q '^checkpoint-' && fail "a checkpoint was written while paused"
  "$wafer" runs control 1 continue --db "$db" >/dev/null || fail "continue: exit $?"
  has_checkpoint() { ls "$tmp/m" | grep -q '^checkpoint-'; }
  wait_for "checkpoint after continue" has_checkpoint
  wait_for "running status again" status_is running
  "$wafer" runs control 1 stop --db "$db" >/dev/null || fail "stop: exit $?"
  for _ in $(seq 1 600); do kill -0 $job 2>/dev/null || break; sleep 0.1; done
  kill -0 $job 2>/dev/null && { kill -9 $job; fail "the job did not stop within 60 s"; }
  wait $job; code=$?
  [[ $code -eq 0 ]] || fail "expected exit 0 after the stop request, got $code: $(cat "$tmp/train.log")"
  log=$(cat "$tmp/train.log")
  for line in "control: pause requested" "control: checkpoint requested" "control: continue requested" \
              "control: stop requested"; do expect_in "$line" "$log"; done
  stopped=$(grep -o "stopped after [0-9]* steps" <<<"$log" | grep -o "[0-9]*")
  [[ -n $stopped ]] || fail "no 'stopped after N steps': $log"
  [[ -d "$tmp/m/checkpoint-$stopped" ]] || fail "no final checkpoint-$stopped: $(ls "$tmp/m")"
  [[ $(ls "$tmp/m" | grep -c '^checkpoint-') -eq 2 ]] || fail "expected 2 checkpoints: $(ls "$tmp/m")"
  status_is stopped || fail "the store does not say stopped"
  out=$("$wafer" runs control 1 pause --db "$db" 2>&1) && fail "a run that ended accepted a pause"
  expect_in "is not training" "$out" ;;
two_stores)
  # Two run stores in one folder number their runs independently; their run folders must not
  # collide (each store's runs live in its own <name>-runs folder).
  for store in a b; do
    "$wafer" train "$src/presets/gpt-nano.yaml" --max-steps 2 --db "$tmp/$store.sqlite" \
        "${tiny_args[@]}" >/dev/null 2>&1 || fail "train into $store.sqlite: exit $?"
  done
  [[ -s "$tmp/a-runs/run-1/model.safetensors" ]] || fail "no $tmp/a-runs/run-1/model.safetensors"
  [[ -s "$tmp/b-runs/run-1/model.safetensors" ]] || fail "no $tmp/b-runs/run-1/model.safetensors"
  expect_in "$tmp/a-runs/run-1" "$("$wafer" runs show 1 --db "$tmp/a.sqlite")" ;;
sigkill)
  # A killed run cannot record its end; `runs list` shows it "interrupted" (running, with nobody
  # holding its folder) instead of "running" forever, and `train --resume` continues it.
  "$wafer" train "$src/presets/gpt-nano.yaml" --json --db "$db" "${tiny_args[@]}" \
      --max-steps 1000000 --set runconfig.checkpoint_steps=2 \
      --set "runconfig.model_dir=$tmp/model" >"$tmp/out.jsonl" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do
    ls "$tmp/model"/checkpoint-* >/dev/null 2>&1 && break
    sleep 0.1
  done
  ls "$tmp/model"/checkpoint-* >/dev/null 2>&1 || { kill -9 $pid; fail "no checkpoint within 60 s"; }
  list=$("$wafer" runs list --db "$db")
  expect_in "running" "$list"
  kill -9 $pid
  wait $pid
  list=$("$wafer" runs list --db "$db")
  expect_in "interrupted" "$list"
  row=$(awk '$1 == 1 {print $(NF-2), $(NF-1)}' <<<"$list")
  [[ $row =~ ^[0-9]+\ [0-9.e+-]+$ ]] || fail "runs list shows no step and loss for the interrupted run: '$row'"
  expect_in '"status":"interrupted"' "$("$wafer" runs list --json --db "$db")"
  expect_in "interrupted" "$("$wafer" runs show 1 --db "$db")"
  # The killed run got as far as its newest checkpoint (how far depends on the machine's load).
  newest=$(ls -d "$tmp/model"/checkpoint-* | sed 's/.*checkpoint-//' | sort -n | tail -1)
  out=$("$wafer" train --resume 1 --max-steps $((newest + 4)) --allow-config-change --json \
        --db "$db" 2>&1) || fail "resume exit $? $out"
  expect_in '"status":"finished"' "$("$wafer" runs list --json --db "$db")" ;;
sample)
  # Train 3 steps of the tiny config, then sample 20 tokens by run id (JSON) and by folder (text).
  "$wafer" train "$src/presets/gpt-nano.yaml" --max-steps 3 --json --db "$db" "${tiny_args[@]}" \
      --set "runconfig.model_dir=$tmp/model" >/dev/null || fail "train exit $?"
  out=$("$wafer" sample 1 --db "$db" --prompt "The " --max-tokens 20 --seed 3 --json) \
      || fail "sample exit $? $out"
  [[ $(grep -c '"event":"token"' <<<"$out") -ge 20 ]] || fail "expected 20 token lines: $out"
  expect_in '"event":"summary"' "$out"
  expect_in '"tokens":20' "$out"
  expect_in '"tokens_per_s":' "$out"
  again=$("$wafer" sample 1 --db "$db" --prompt "The " --max-tokens 20 --seed 3 --json)
  [[ "$(grep '"event":"token"' <<<"$out")" == "$(grep '"event":"token"' <<<"$again")" ]] \
      || fail "the same seed gave different tokens"
  text=$("$wafer" sample "$tmp/model" --prompt "The " --max-tokens 20 --temperature 0 2>"$tmp/err") \
      || fail "text sample exit $?"
  [[ $text == "The "* ]] || fail "text output does not start with the prompt: $text"
  expect_in "20 tokens in" "$(cat "$tmp/err")"
  out=$("$wafer" sample "$tmp/nothing" --prompt x 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "expected exit 1 for a missing folder, got $code"
  expect_in "nothing" "$out"
  rm "$tmp/model/tokenizer.json"
  out=$("$wafer" sample "$tmp/model" --prompt x 2>&1) && fail "a folder without tokenizer must fail"
  expect_in "tokenizer" "$out" ;;
mpi_train|mpi_resume)
  # mpi_train: `mpirun -np P wafer train` spreads runconfig.num_csx = 3 systems over P = 2 and 3 processes
  # and ends with the one-process run's tensors, bit for bit (dropout on, so the per-system
  # seeds are checked too). Only rank 0 prints the run; every rank prints where it runs. More
  # processes than systems is refused with the fix. Compared tensor by tensor: the files'
  # metadata holds each run's own model_dir.
  # mpi_resume: a job whose rank 1 is killed (SIGKILL) after a checkpoint ends within 15 s, naming
  # the rank and host, and shows interrupted; `--resume` with 2 processes, and from a copy with
  # 1, finishes with the uninterrupted run's tensors. Ctrl-C to
  # mpirun stops the job after a step with a final checkpoint, which resumes exactly too.
  mpirun=${WAFER_MPIEXEC:-mpirun}
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  mpi_args=("${tiny_args[@]}" --set runconfig.num_csx=3 --set train_input.batch_size=6
            --set model.dropout_rate=0.1 --max-steps 5 --threads 1)
  if [[ $case_name == mpi_resume ]]; then
    mpi_args=("${tiny_args[@]}" --set runconfig.num_csx=2 --set train_input.batch_size=4
              --set model.dropout_rate=0.1 --set runconfig.checkpoint_steps=100 --threads 1
              --set runconfig.log_steps=100 --set runconfig.eval_frequency=100)
    "$wafer" train "$src/presets/gpt-nano.yaml" --max-steps 1500 --db "$tmp/ref.sqlite" \
        "${mpi_args[@]}" --set "runconfig.model_dir=$tmp/ref" >/dev/null 2>&1 || fail "ref: exit $?"
    "$mpirun" --oversubscribe -np 2 "$wafer" train "$src/presets/gpt-nano.yaml" --max-steps 1500 \
        --db "$tmp/a.sqlite" "${mpi_args[@]}" --set "runconfig.model_dir=$tmp/a" >"$tmp/a.log" 2>&1 &
    job=$!
    for _ in $(seq 1 1000); do [[ -d "$tmp/a/checkpoint-100" ]] && break; sleep 0.02; done
    [[ -d "$tmp/a/checkpoint-100" ]] || { kill -9 "$job"; fail "no checkpoint-100 within 20 s"; }
    # Kill rank 1, not rank 0: the job must not wait on the dead rank. Within 15 s every
    # process is gone, mpirun names the dead rank and its host, and the run shows interrupted.
    rank1=$(for pid in $(pgrep -P "$job"); do
              tr '\0' '\n' <"/proc/$pid/environ" | grep -qx "OMPI_COMM_WORLD_RANK=1" && echo "$pid"
            done)
    [[ -n "$rank1" ]] || fail "no rank 1 process under mpirun $job"
    killed_at=$(date +%s)
    kill -9 "$rank1"
    for _ in $(seq 1 150); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$job" 2>/dev/null && { kill -9 "$job"; fail "the job still ran 15 s after rank 1 died"; }
    wait "$job" && fail "the job ended well after a rank was killed: $(cat "$tmp/a.log")"
    (( $(date +%s) - killed_at <= 15 )) || fail "the job took over 15 s to stop"
    grep -q "rank 1 .* on node $(hostname)" "$tmp/a.log" || fail "no message naming rank 1 and its host: $(cat "$tmp/a.log")"
    [[ -f "$tmp/a/model.safetensors" ]] && fail "the killed job finished before the kill"
    out=$("$wafer" runs list --db "$tmp/a.sqlite" 2>&1)
    expect_in "interrupted" "$out"
    out=$("$wafer" runs show 1 --db "$tmp/a.sqlite" 2>&1)
    expect_in "mpirun -np 2 wafer train --resume 1 takes the newest" "$out"
    expect_in "checkpoint-100" "$out"
    cp -r "$tmp/a" "$tmp/b"
    cp "$tmp/a.sqlite" "$tmp/b.sqlite"
    newest=$(ls -d "$tmp/b"/checkpoint-* | sort -t- -k2 -n | tail -1)
    out=$("$mpirun" --oversubscribe -np 2 "$wafer" train --resume "$tmp/a" --db "$tmp/a.sqlite" \
          --threads 1 2>&1) || fail "resume with 2 processes: exit $?: $out"
    expect_in "finished after 1500 steps" "$out"
    same_tensors "$tmp/ref/model.safetensors" "$tmp/a/model.safetensors"
    out=$("$wafer" train --resume "$newest" --db "$tmp/b.sqlite" --threads 1 \
          --set "runconfig.model_dir=$tmp/b" 2>&1) || fail "resume with 1 process: exit $?: $out"
    same_tensors "$tmp/ref/model.safetensors" "$tmp/b/model.safetensors"
    # Job control on, so that the background mpirun does not ignore SIGINT; few log lines, so
    # that rank 0 never waits on an output pipe mpirun no longer drains once interrupted.
    set -m
    "$mpirun" --oversubscribe -np 2 "$wafer" train "$src/presets/gpt-nano.yaml" --max-steps 1500 \
        --db "$tmp/c.sqlite" "${mpi_args[@]}" --set "runconfig.model_dir=$tmp/c" >"$tmp/c.log" 2>&1 &
    job=$!
    set +m
    for _ in $(seq 1 1000); do [[ -d "$tmp/c/checkpoint-100" ]] && break; sleep 0.02; done
    kill -INT "$job"
    wait "$job"
    grep -q "stopped after" "$tmp/c.log" || fail "Ctrl-C did not stop the job cleanly: $(cat "$tmp/c.log")"
    stopped=$(grep -o "stopped after [0-9]* steps" "$tmp/c.log" | grep -o "[0-9]*")
    [[ -d "$tmp/c/checkpoint-$stopped" ]] || fail "no final checkpoint-$stopped: $(ls "$tmp/c")"
    out=$("$mpirun" --oversubscribe -np 2 "$wafer" train --resume "$tmp/c" --db "$tmp/c.sqlite" \
          --threads 1 2>&1) || fail "resume after Ctrl-C: exit $?: $out"
    same_tensors "$tmp/ref/model.safetensors" "$tmp/c/model.safetensors"
    exit 0
  fi
  "$wafer" train "$src/presets/gpt-nano.yaml" --db "$tmp/one.sqlite" "${mpi_args[@]}" \
      --set "runconfig.model_dir=$tmp/one" >/dev/null 2>&1 || fail "one process: exit $?"
  for np in 2 3; do
    out=$("$mpirun" --oversubscribe -np $np "$wafer" train "$src/presets/gpt-nano.yaml" \
          --db "$tmp/np$np.sqlite" "${mpi_args[@]}" --set "runconfig.model_dir=$tmp/np$np" 2>&1) \
        || fail "mpirun -np $np: exit $?: $out"
    same_tensors "$tmp/one/model.safetensors" "$tmp/np$np/model.safetensors"
    [[ $(grep -c "finished after 5 steps" <<<"$out") -eq 1 ]] || fail "expected one summary: $out"
    for rank in $(seq 0 $((np - 1))); do expect_in "rank $rank of $np on " "$out"; done
    expect_in "cluster: 3 systems over $np processes, MemoryX on rank 0; rank 0 on " "$out"
    expect_in "; rank $((np - 1)) on " "$out"
    # The run store keeps the placement: `wafer runs show` prints it (JSON too).
    out=$("$wafer" runs show 1 --db "$tmp/np$np.sqlite" 2>&1) || fail "runs show: exit $?: $out"
    expect_in "placement ($np processes, MemoryX and SwarmX on rank 0):" "$out"
    expect_in "rank 0   on " "$out"
    last_systems="system 2"; [[ $np -eq 2 ]] && last_systems="systems 1-2"
    grep -qE "^  rank $((np - 1)) +on [^ ]+ +$last_systems\$" <<<"$out" \
        || fail "runs show: expected rank $((np - 1)) with $last_systems: $out"
    out=$("$wafer" runs show 1 --json --db "$tmp/np$np.sqlite" 2>&1) || fail "runs show --json: $out"
    expect_in "\"placement\":.{\"first_system\":0,\"host\":" "$out"
  done
  out=$("$wafer" runs show 1 --db "$tmp/one.sqlite" 2>&1) || fail "runs show one: exit $?: $out"
  [[ $out != *"placement ("* ]] || fail "a one-process run shows a placement: $out"
  out=$("$mpirun" --oversubscribe -np 4 "$wafer" train "$src/presets/gpt-nano.yaml" \
        --db "$tmp/np4.sqlite" "${mpi_args[@]}" 2>&1) && fail "4 processes for 3 systems ran: $out"
  expect_in "runconfig.num_csx is 3" "$out"
  out=$("$mpirun" --oversubscribe -np 2 "$wafer" runs list --db "$tmp/np2.sqlite" 2>&1); code=$?
  [[ $code -ne 0 ]] || fail "runs list under mpirun: expected a refusal: $out"
  expect_in "only \`wafer train\` and \`wafer sweep\` run across processes" "$out" ;;
mpi_shards)
  # memoryx.shards: MemoryX split over the first N ranks by whole layers. np 2 with 2 shards and
  # np 3 with 2 and 3 shards end with the one-process run's tensors, bit for bit (dropout,
  # clipping, evaluations that gather the weights, checkpoints written tensor by tensor from the
  # shards: their optimizer state too). A sharded job killed after a checkpoint resumes exactly
  # with 1 process (1 shard) and with 3 processes (3 shards). More shards than processes is
  # refused with the fix.
  mpirun=${WAFER_MPIEXEC:-mpirun}
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  shard_args=("${tiny_args[@]}" --set runconfig.num_csx=3 --set train_input.batch_size=6
              --set model.dropout_rate=0.1 --threads 1 --set runconfig.checkpoint_steps=2)
  "$wafer" train "$src/presets/gpt-nano.yaml" --max-steps 5 --db "$tmp/one.sqlite" \
      "${shard_args[@]}" --set "runconfig.model_dir=$tmp/one" >/dev/null 2>&1 \
      || fail "one process: exit $?"
  for run in 2:2 3:2 3:3; do
    np=${run%:*} shards=${run#*:} dir="$tmp/np${np}s${shards}"
    out=$("$mpirun" --oversubscribe -np $np "$wafer" train "$src/presets/gpt-nano.yaml" \
          --max-steps 5 --db "$dir.sqlite" "${shard_args[@]}" --set memoryx.shards=$shards \
          --set "runconfig.model_dir=$dir" 2>&1) || fail "np $np, $shards shards: exit $?: $out"
    expect_in "finished after 5 steps" "$out"
    expect_in "MemoryX in $shards shards (rank 0: embeddings" "$out"
    expect_in "rank $((shards - 1)): " "$out"
    same_tensors "$tmp/one/model.safetensors" "$dir/model.safetensors"
    for c in 2 4 5; do
      same_tensors "$tmp/one/checkpoint-$c/model.safetensors" "$dir/checkpoint-$c/model.safetensors"
      same_tensors "$tmp/one/checkpoint-$c/optimizer.safetensors" \
                   "$dir/checkpoint-$c/optimizer.safetensors"
    done
    # The run store keeps which rank held which shard: `wafer runs show` (and --json).
    out=$("$wafer" runs show 1 --db "$dir.sqlite" 2>&1) || fail "runs show: exit $?: $out"
    expect_in "placement ($np processes, MemoryX in $shards shards, SwarmX on rank 0):" "$out"
    expect_in "  MemoryX shard on rank 0: embeddings (" "$out"
    expect_in "  MemoryX shard on rank $((shards - 1)): " "$out"
    out=$("$wafer" runs show 1 --json --db "$dir.sqlite" 2>&1) || fail "runs show --json: $out"
    expect_in "\"memoryx_shards\":.{\"bytes\":" "$out"
  done
  out=$("$wafer" validate "$src/presets/gpt-nano.yaml" --set runconfig.num_csx=2 \
        --set memoryx.shards=2 2>&1) || fail "validate with 2 shards: exit $?: $out"
  expect_in "memoryx     2 shards (mpirun -np 2 or more): rank 0: embeddings..h.1 (" "$out"
  expect_in "; rank 1: h.2..head (" "$out"
  # Killed after a checkpoint (2 processes, 2 shards), resumed with 1 process and with 3.
  long_args=("${shard_args[@]}" --set runconfig.checkpoint_steps=50 --set runconfig.log_steps=100
             --set runconfig.eval_frequency=1000)
  "$wafer" train "$src/presets/gpt-nano.yaml" --max-steps 400 --db "$tmp/ref.sqlite" \
      "${long_args[@]}" --set "runconfig.model_dir=$tmp/ref" >/dev/null 2>&1 || fail "ref: exit $?"
  "$mpirun" --oversubscribe -np 2 "$wafer" train "$src/presets/gpt-nano.yaml" --max-steps 400 \
      --db "$tmp/k.sqlite" "${long_args[@]}" --set memoryx.shards=2 \
      --set "runconfig.model_dir=$tmp/k" >"$tmp/k.log" 2>&1 &
  job=$!
  for _ in $(seq 1 1500); do [[ -d "$tmp/k/checkpoint-50" ]] && break; sleep 0.02; done
  [[ -d "$tmp/k/checkpoint-50" ]] || { kill -9 "$job"; fail "no checkpoint-50 within 30 s"; }
  ranks=$(pgrep -P "$job")
  [[ -n "$ranks" ]] || fail "no rank processes under mpirun $job"
  kill -9 $(tail -1 <<<"$ranks")
  wait "$job" && fail "the job went on after a rank was killed: $(cat "$tmp/k.log")"
  [[ -f "$tmp/k/model.safetensors" ]] && fail "the killed job finished before the kill"
  newest=$(ls -d "$tmp/k"/checkpoint-* | sort -t- -k2 -n | tail -1)
  cp -r "$tmp/k" "$tmp/k3"
  out=$("$wafer" train --resume "$newest" --db "$tmp/k1.sqlite" --threads 1 \
        --set memoryx.shards=1 --set "runconfig.model_dir=$tmp/k1" 2>&1) \
      || fail "resume with 1 process: exit $?: $out"
  expect_in "finished after 400 steps" "$out"
  same_tensors "$tmp/ref/model.safetensors" "$tmp/k1/model.safetensors"
  out=$("$mpirun" --oversubscribe -np 3 "$wafer" train --resume "$tmp/k3/$(basename "$newest")" \
        --db "$tmp/k3.sqlite" --threads 1 --set memoryx.shards=3 \
        --set "runconfig.model_dir=$tmp/k3" 2>&1) || fail "resume with 3 shards: exit $?: $out"
  same_tensors "$tmp/ref/model.safetensors" "$tmp/k3/model.safetensors"
  # Refused: more shards than processes, or than systems.
  out=$("$wafer" train "$src/presets/gpt-nano.yaml" --db "$tmp/r.sqlite" "${shard_args[@]}" \
        --set memoryx.shards=2 2>&1) && fail "2 shards in 1 process ran: $out"
  expect_in "memoryx.shards is 2 but the job has 1 process(es)" "$out"
  expect_in "mpirun -np 2" "$out"
  out=$("$wafer" validate "$src/presets/gpt-nano.yaml" --set memoryx.shards=2 2>&1) \
      && fail "2 shards for 1 system validated: $out"
  expect_in "memoryx.shards is 2 but runconfig.num_csx is 1" "$out" ;;
mpi_llama)
  # Llama blocks across processes (issue 33): llama-nano (rotary, RMSNorm, SwiGLU, 4 heads sharing
  # 2 KV heads, no biases) with dropout on 3 systems ends with the one-process run's tensors, bit
  # for bit, under mpirun -np 2 with 2 MemoryX shards and -np 3 with 3, checkpoints (weights and
  # optimizer state) included; in bf16 too with 3 shards.
  mpirun=${WAFER_MPIEXEC:-mpirun}
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  llama_args=("${tiny_args[@]}" --set model.num_hidden_layers=2 --set model.num_heads=4
              --set model.extra_attention_params.num_kv_groups=2 --set model.filter_size=88
              --set runconfig.num_csx=3 --set train_input.batch_size=6
              --set model.dropout_rate=0.1 --threads 1 --set runconfig.checkpoint_steps=2)
  for precision in false true; do
    args=("${llama_args[@]}" --set "model.mixed_precision=$precision")
    "$wafer" train "$src/presets/llama-nano.yaml" --max-steps 4 --db "$tmp/one$precision.sqlite" \
        "${args[@]}" --set "runconfig.model_dir=$tmp/one$precision" >/dev/null 2>&1 \
        || fail "one process (bf16 $precision): exit $?"
    runs="2:2 3:3"
    [[ $precision == true ]] && runs="3:3"
    for run in $runs; do
      np=${run%:*} shards=${run#*:} dir="$tmp/np${np}s${shards}$precision"
      out=$("$mpirun" --oversubscribe -np $np "$wafer" train "$src/presets/llama-nano.yaml" \
            --max-steps 4 --db "$dir.sqlite" "${args[@]}" --set memoryx.shards=$shards \
            --set "runconfig.model_dir=$dir" 2>&1) || fail "np $np, $shards shards: exit $?: $out"
      expect_in "finished after 4 steps" "$out"
      expect_in "MemoryX in $shards shards (rank 0: embeddings" "$out"
      same_tensors "$tmp/one$precision/model.safetensors" "$dir/model.safetensors"
      for c in 2 4; do
        same_tensors "$tmp/one$precision/checkpoint-$c/model.safetensors" \
                     "$dir/checkpoint-$c/model.safetensors"
        same_tensors "$tmp/one$precision/checkpoint-$c/optimizer.safetensors" \
                     "$dir/checkpoint-$c/optimizer.safetensors"
      done
    done
  done ;;
mpi_shards_memory)
  # The point of memoryx.shards: a model whose MemoryX (57 M parameters: 874 MiB of fp32 weights,
  # gradients and AdamW state) and training buffers do not fit one process's memory limit trains
  # with 2 processes holding one shard each, under the same limit per process. The limit is
  # ulimit -v (address space), so it also bounds Open MPI's mappings and the thread stacks; with
  # MALLOC_ARENA_MAX=2 a rank of a tiny model peaks at about 0.37 GB of address space, a shard
  # rank of this model at 1.67 GB and the one-process run at 2.42 GB (measured with VmPeak), so
  # 2,000,000 kB (1.91 GiB) leaves a margin on both sides.
  mpirun=${WAFER_MPIEXEC:-mpirun}
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 MALLOC_ARENA_MAX=2
  limit_kb=2000000
  wide=(--set model.hidden_size=1536 --set model.num_hidden_layers=2 --set model.num_heads=8
        --set model.filter_size=6144 --set train_input.max_sequence_length=16
        --set train_input.batch_size=2 --set runconfig.eval_steps=0
        --set runconfig.eval_frequency=0 --set runconfig.num_csx=2 --threads 1 --max-steps 2
        --set wafer.emulate=false)
  out=$(ulimit -v $limit_kb; "$wafer" train "$src/presets/gpt-nano.yaml" --db "$tmp/one.sqlite" \
        "${wide[@]}" --set "runconfig.model_dir=$tmp/one" 2>&1) \
      && fail "one process trained under ulimit -v $limit_kb: $out"
  expect_in "out of memory" "$out"
  out=$("$mpirun" --oversubscribe -np 2 bash -c "ulimit -v $limit_kb; exec \"\$0\" \"\$@\"" \
        "$wafer" train "$src/presets/gpt-nano.yaml" --db "$tmp/two.sqlite" "${wide[@]}" \
        --set memoryx.shards=2 --set "runconfig.model_dir=$tmp/two" 2>&1) \
      || fail "2 processes with 2 shards under ulimit -v $limit_kb: exit $?: $out"
  expect_in "MemoryX in 2 shards (rank 0: embeddings..h.0 (441 MiB); rank 1: h.1..head (432 MiB))" "$out"
  expect_in "finished after 2 steps" "$out" ;;
resume_exact)
  # Training M steps equals: training, being stopped (Ctrl-C) or killed (SIGKILL) after a
  # checkpoint, resuming with `--resume`, and finishing. Compared tensor by tensor (the files'
  # metadata holds each run's own model_dir) by an independent reader: Python's standard library.
  ckpt_args=("${tiny_args[@]}" --set runconfig.checkpoint_steps=10 --set model.dropout_rate=0.1)
  steps=600
  "$wafer" train "$src/presets/gpt-nano.yaml" --max-steps $steps --db "$tmp/ref.sqlite" \
      "${ckpt_args[@]}" --set "runconfig.model_dir=$tmp/ref" >/dev/null 2>&1 || fail "reference exit $?"
  wait_for_checkpoint() {  # folder pid
    for _ in $(seq 1 600); do
      [[ -d "$1/checkpoint-10" ]] && return 0
      sleep 0.02
    done
    kill -9 "$2"; fail "no checkpoint-10 within 12 s"
  }
  for signal in INT KILL; do
    db2="$tmp/$signal.sqlite"
    "$wafer" train "$src/presets/gpt-nano.yaml" --max-steps $steps --json --db "$db2" \
        "${ckpt_args[@]}" --set "runconfig.model_dir=$tmp/$signal" >"$tmp/$signal.jsonl" 2>&1 &
    pid=$!
    wait_for_checkpoint "$tmp/$signal" $pid
    kill -$signal $pid
    wait $pid; code=$?
    if [[ $signal == KILL ]]; then
      [[ $code -eq 137 ]] || fail "expected the SIGKILL to end the run (137), got $code"
    else
      [[ $code -eq 0 ]] || fail "expected exit 0 after Ctrl-C, got $code"
      expect_in '"status":"stopped"' "$(cat "$tmp/$signal.jsonl")"
    fi
    newest=$(ls -d "$tmp/$signal"/checkpoint-* | sort -V | tail -1)
    [[ -f "$newest/trainer_state.json" ]] || fail "no complete checkpoint after SIG$signal"
    out=$("$wafer" train --resume 1 --db "$db2" --json 2>&1) || fail "resume exit $?: $out"
    expect_in "resumed from $newest" "$out"
    expect_in '"status":"finished"' "$out"
    expect_in "\"steps\":$steps" "$out"
    same_tensors "$tmp/ref/model.safetensors" "$tmp/$signal/model.safetensors"
    same_tensors "$tmp/ref/checkpoint-$steps/optimizer.safetensors" \
        "$tmp/$signal/checkpoint-$steps/optimizer.safetensors"
    list=$("$wafer" runs list --json --db "$db2")
    [[ $(grep -o '"id":' <<<"$list" | wc -l) -eq 1 ]] || fail "the resume should continue run 1: $list"
    expect_in '"status":"finished"' "$list"
  done ;;
resume_refusals)
  "$wafer" train "$src/presets/gpt-nano.yaml" --max-steps 4 --db "$db" "${tiny_args[@]}" \
      --set runconfig.checkpoint_steps=2 --set "runconfig.model_dir=$tmp/model" >/dev/null 2>&1 \
      || fail "train exit $?"
  out=$("$wafer" train 2>&1); code=$?
  [[ $code -eq 2 ]] || fail "expected exit 2 without config or --resume, got $code"
  expect_in "--resume" "$out"
  out=$("$wafer" train --resume "$tmp/nowhere" --db "$db" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "expected exit 1 for a missing folder, got $code"
  expect_in "nowhere" "$out"
  # A config change that alters training is explained, and refused unless allowed.
  out=$("$wafer" train --resume "$tmp/model/checkpoint-2" --db "$db" \
        --set optimizer.weight_decay=0.5 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "expected exit 1 for a config change, got $code"
  expect_in "optimizer.weight_decay: " "$out"
  expect_in "allow-config-change" "$out"
  expect_in "checkpoint-4" "$("$wafer" train --resume 1 --db "$db" --max-steps 4 2>&1)"
  show=$("$wafer" runs show 1 --db "$db") || fail "runs show exit $?"
  expect_in "step 4 .*checkpoint-4" "$show"
  expect_in '"step":2' "$("$wafer" runs show 1 --db "$db" --json)"
  # A damaged file is named; nothing is written.
  before=$(sha256sum "$tmp/model/checkpoint-4/optimizer.safetensors" "$tmp/model/model.safetensors")
  printf 'x' | dd of="$tmp/model/checkpoint-4/optimizer.safetensors" bs=1 seek=200 conv=notrunc 2>/dev/null
  damaged=$(sha256sum "$tmp/model/checkpoint-4/optimizer.safetensors" "$tmp/model/model.safetensors")
  out=$("$wafer" train --resume 1 --db "$db" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "expected exit 1 for a damaged checkpoint, got $code"
  expect_in "checkpoint-4/optimizer.safetensors" "$out"
  [[ "$damaged" == "$(sha256sum "$tmp/model/checkpoint-4/optimizer.safetensors" "$tmp/model/model.safetensors")" ]] \
      || fail "a refused resume changed files"
  [[ "$before" != "$damaged" ]] || fail "the test did not damage the file" ;;
cerebras_111m_few_steps)
  # The published 111M shape validates and trains a few steps (short sequences, tiny batch).
  out=$("$wafer" train "$src/presets/cerebras-gpt-111m.yaml" --max-steps 2 --json --db "$db" \
        --set train_input.batch_size=1 --set train_input.max_sequence_length=128 \
        --set eval_input.batch_size=1 --set runconfig.eval_steps=1 \
        --set "runconfig.model_dir=$tmp/model") || fail "exit $? $out"
  expect_in '"parameters":111050496' "$out"
  expect_in '"status":"finished"' "$out" ;;
cerebras_111m_out_of_memory)
  # Issue 12, 4b: this exact command died with std::bad_alloc (exit 134). Under a 4 GB address
  # space limit the 111M model's memory cannot be had; the run must end as a clear failure.
  out=$( (ulimit -v 4194304; "$wafer" train "$src/presets/cerebras-gpt-111m.yaml" --max-steps 2 \
        --set train_input.batch_size=1) 2>&1); code=$?
  [[ $code -ne 134 ]] || fail "aborted (exit 134): $out"
  [[ $code -eq 1 ]] || fail "expected exit 1, got $code: $out"
  expect_in "out of memory while allocating" "$out"
  expect_in "Lower train_input.batch_size" "$out" ;;
sweep_json)
  # A 2 x 2 sweep file over gpt-nano made tiny: one JSON object per finished trial, keyed by config
  # key, then a summary; the trials are runs of the sweep in the store. 4 trials exceed
  # max_trials 3, so --yes is needed.
  cat >"$tmp/sweep.yaml" <<EOF
sweep:
  base: $src/presets/gpt-nano.yaml
  max_steps: 3
  max_trials: 3
  parallel_trials: 2
  parameters:
    model.hidden_size: {values: [16, 32], with: {model.filter_size: [32, 64]}}
    optimizer.learning_rate: {log2_range: {min: -9, max: -8, step: 1}}
EOF
  out=$("$wafer" sweep "$tmp/sweep.yaml" --json --yes --db "$db" "${tiny_args[@]:2}" \
        --set wafer.emulate=false --set runconfig.eval_frequency=0 2>"$tmp/err") \
      || fail "exit $? $out $(cat "$tmp/err")"
  [[ $(grep -c '"event":"trial"' <<<"$out") -eq 4 ]] || fail "expected 4 trial lines: $out"
  expect_in '"model.hidden_size":16,' "$out"
  expect_in '"optimizer.learning_rate":0.001953125' "$out"
  expect_in '"seed":1' "$out"
  expect_in '"status":"finished"' "$out"
  grep '"event":"trial"' <<<"$out" | grep -q '"final_loss":[0-9]' || fail "no final_loss: $out"
  # Every trial line carries the estimated seconds left (engine/sweep/eta.h); the last says 0.
  [[ $(grep '"event":"trial"' <<<"$out" | grep -c '"eta_s":') -eq 4 ]] || fail "no eta_s: $out"
  grep '"event":"trial"' <<<"$out" | tail -1 | grep -q '"eta_s":0.0' \
      || fail "the last trial's eta_s is not 0: $out"
  expect_in '"event":"summary"' "$out"
  expect_in '"transfer":' "$out"
  list=$("$wafer" runs list --json --db "$db") || fail "runs list exit $?"
  [[ $(grep -o '"kind":"sweep-trial"' <<<"$list" | wc -l) -eq 4 ]] || fail "expected 4 trial runs: $list"
  text=$("$wafer" sweep "$tmp/sweep.yaml" --yes --db "$db" "${tiny_args[@]:2}" \
         --set wafer.emulate=false --set runconfig.eval_frequency=0 \
         --set 'sweep.parameters={optimizer.learning_rate: [0.001]}' 2>&1) || fail "text exit $? $text"
  expect_in "trial" "$text"
  expect_in "finished" "$text"
  expect_in "no transfer summary" "$text" ;;
sweep_resume)
  # Ctrl-C stops a sweep (exit 0, status stopped); --resume runs only what is left and reports
  # the earlier trials too, so the JSON covers the whole sweep.
  cat >"$tmp/sweep.yaml" <<EOF
sweep:
  base: $src/presets/gpt-nano.yaml
  max_steps: 400
  parameters:
    optimizer.learning_rate: [0.001, 0.002, 0.003]
EOF
  args=(--db "$db" "${tiny_args[@]}" --set wafer.emulate=false --set runconfig.eval_frequency=0
        --set runconfig.log_steps=100)
  "$wafer" sweep "$tmp/sweep.yaml" --json "${args[@]}" >"$tmp/out.jsonl" 2>"$tmp/err" &
  pid=$!
  for _ in $(seq 1 600); do
    grep -q '"event":"trial"' "$tmp/out.jsonl" 2>/dev/null && break
    sleep 0.1
  done
  grep -q '"event":"trial"' "$tmp/out.jsonl" || { kill -9 $pid; fail "no trial within 60 s"; }
  kill -INT $pid
  wait $pid; code=$?
  [[ $code -eq 0 ]] || fail "expected exit 0 after Ctrl-C, got $code: $(cat "$tmp/out.jsonl" "$tmp/err")"
  out=$(cat "$tmp/out.jsonl")
  expect_in '"status":"stopped"' "$out"
  id=$(grep '"event":"summary"' <<<"$out" | sed -E 's/.*"sweep_id":([0-9]+).*/\1/')
  done_before=$(grep '"event":"trial"' <<<"$out" | grep -c '"status":"finished"')
  [[ $done_before -ge 1 && $done_before -lt 3 ]] || fail "expected 1 or 2 finished trials: $out"
  count_trial_runs() { "$wafer" runs list --json --db "$db" | grep -o '"kind":"sweep-trial"' | wc -l; }
  before=$(count_trial_runs)
  again=$("$wafer" sweep --resume "$id" --json --db "$db" 2>"$tmp/err2") \
      || fail "resume exit $? $again $(cat "$tmp/err2")"
  [[ $(grep -c '"event":"trial"' <<<"$again") -eq 3 ]] || fail "expected 3 trial lines: $again"
  [[ $(grep '"event":"trial"' <<<"$again" | grep -c '"status":"finished"') -eq 3 ]] \
      || fail "expected every trial finished: $again"
  expect_in "already done" "$(cat "$tmp/err2")"
  after=$(count_trial_runs)
  [[ $((after - before)) -eq $((3 - done_before)) ]] \
      || fail "the resume ran $((after - before)) trials, expected $((3 - done_before))" ;;
mpi_reduce_tree)
  # memoryx.reduce_fan_in: gradients reduced in a tree of ranks that keeps SwarmX's summation
  # order (engine/streaming/rank_tree.h). 8 systems over 4 processes as a gather (0), a chain (1),
  # a binomial tree (2) and SwarmX's fan-in (4), and over 3 processes with 3 MemoryX shards (each
  # layer's tree rooted at its shard's rank, blocks of 2-3 systems that are not SwarmX's groups):
  # every job ends with the one-process run's tensors, bit for bit. The measured bytes per link
  # follow the tree: in the binomial tree rank 3 sends its 2 systems' slices to rank 2, which
  # sums them with its own into SwarmX's second group and sends 1 slice.
  mpirun=${WAFER_MPIEXEC:-mpirun}
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  tree_args=("${tiny_args[@]}" --set runconfig.num_csx=8 --set train_input.batch_size=8
             --set model.dropout_rate=0.1 --max-steps 3 --threads 1)
  "$wafer" train "$src/presets/gpt-nano.yaml" --db "$tmp/one.sqlite" "${tree_args[@]}" \
      --set "runconfig.model_dir=$tmp/one" >/dev/null 2>&1 || fail "one process: exit $?"
  link_bytes() {  # the bytes rank $2 sent up, from a job's log $1 ("rank 3 1.5 KiB")
    grep -o "reduce tree (memoryx.reduce_fan_in [0-9]*): .*" <<<"$1" \
      | grep -oE "rank $2 [0-9.]+ [KMG]?i?B" | awk '{ m = 1; if ($4 == "KiB") m = 1024;
          if ($4 == "MiB") m = 1048576; printf "%d\n", $3 * m }'
  }
  for run in 4:0:1 4:1:1 4:2:1 4:4:1 3:2:3; do
    IFS=: read -r np fan shards <<<"$run"
    dir="$tmp/np${np}f${fan}s${shards}"
    out=$("$mpirun" --oversubscribe -np "$np" "$wafer" train "$src/presets/gpt-nano.yaml" \
          --db "$dir.sqlite" "${tree_args[@]}" --set "memoryx.reduce_fan_in=$fan" \
          --set "memoryx.shards=$shards" --set "runconfig.model_dir=$dir" 2>&1) \
        || fail "np $np, fan-in $fan, $shards shards: exit $?: $out"
    same_tensors "$tmp/one/model.safetensors" "$dir/model.safetensors"
    expect_in "reduce tree (memoryx.reduce_fan_in $fan): gradient bytes each rank sent to its parent in the last step: " "$out"
    if [[ $fan == 2 && $np == 4 ]]; then
      b1=$(link_bytes "$out" 1) b2=$(link_bytes "$out" 2) b3=$(link_bytes "$out" 3)
      [[ -n $b1 && -n $b2 && -n $b3 ]] || fail "no link bytes in: $out"
      # Ranks 1 and 3 each send 2 raw slices per layer, rank 2 one summed group.
      awk -v a="$b3" -v b="$b2" -v c="$b1" 'BEGIN { exit !(a > 1.98 * b && a < 2.02 * b && a == c) }' \
        || fail "binomial tree: expected rank 3 ($b3 B) = rank 1 ($b1 B) = 2 x rank 2 ($b2 B)"
    fi
  done ;;
mpi_sweep|mpi_sweep_fault)
  # mpi_sweep: `mpirun -np P wafer sweep` with P = 2 and 3 records the same sweep as one process
  # (parallel_trials 2): every trial's verdict, loss bit for bit, metrics, log and final tensors
  # (sweep_store_dump.py prints what must not differ). ASHA across processes prunes exactly at
  # its rung. A sweep rank 0 refuses releases the workers.
  # mpi_sweep_fault: a worker killed (SIGKILL) in the middle of its trial under
  # --mca orte_enable_recovery 1 loses only that trial: it runs again on another rank and the
  # sweep ends as the one-process sweep does. Without recovery mpirun ends the job; `wafer sweep
  # --resume` in one process then runs only the trials without a result, ending the same.
  mpirun=${WAFER_MPIEXEC:-mpirun}
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  steps=20; [[ $case_name == mpi_sweep_fault ]] && steps=300
  write_small_sweep "$tmp/sweep.yaml" "$src/presets/gpt-nano.yaml" "$steps"
  sweep_args=("${tiny_args[@]:2}" --set wafer.emulate=false --set runconfig.eval_frequency=0
              --set runconfig.num_threads=1 --json)
  "$wafer" sweep "$tmp/sweep.yaml" --db "$tmp/one.sqlite" "${sweep_args[@]}" >/dev/null 2>&1 \
      || fail "one process: exit $?"
  sweep_dump "$tmp/one.sqlite" >"$tmp/one.txt"
  [[ $(grep -c "^trial .* finished steps $steps " "$tmp/one.txt") -eq 8 ]] \
      || fail "expected 8 finished trials: $(cat "$tmp/one.txt")"
  trial_runs() {  # store
    python3 -c "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute(
        \"select count(*) from runs where kind = 'sweep-trial'\").fetchone()[0])" "$1" 2>/dev/null
  }
  rank2() {  # mpirun's pid: the process of rank 2
    for p in $(pgrep -P "$1"); do
      tr '\0' '\n' <"/proc/$p/environ" | grep -qx OMPI_COMM_WORLD_RANK=2 && echo "$p"
    done
  }
  if [[ $case_name == mpi_sweep ]]; then
    for np in 2 3; do
      out=$("$mpirun" --oversubscribe -np $np "$wafer" sweep "$tmp/sweep.yaml" \
            --db "$tmp/np$np.sqlite" "${sweep_args[@]}" 2>&1) || fail "mpirun -np $np: exit $?: $out"
      [[ $(grep -c '"event":"trial"' <<<"$out") -eq 8 ]] || fail "expected 8 trial lines: $out"
      expect_in "across $np processes: one trial at a time on each rank" "$out"
      for rank in $(seq 1 $((np - 1))); do expect_in "rank $rank of $np on .*: sweep trials" "$out"; done
      sweep_dump "$tmp/np$np.sqlite" >"$tmp/np$np.txt"
      diff "$tmp/one.txt" "$tmp/np$np.txt" >"$tmp/diff" \
          || fail "np $np recorded another sweep than one process: $(head -20 "$tmp/diff")"
    done
    # ASHA: pruned trials stop right after their rung, on whichever rank they ran. Asynchronous
    # ASHA decides by arrival order, so the learning rates go best first (higher is better here
    # at rung 10): the later, worse trials then meet better ones at the rung and are pruned,
    # whatever the timing.
    sed 's/{log2_range: {min: -9, max: -6, step: 1}}/{values: [0.015625, 0.0078125, 0.00390625, 0.001953125]}/' \
        "$tmp/sweep.yaml" >"$tmp/asha.yaml"
    grep -q "values: \[0.015625" "$tmp/asha.yaml" || fail "asha.yaml: the learning rates were not reordered"
    out=$("$mpirun" --oversubscribe -np 3 "$wafer" sweep "$tmp/asha.yaml" --db "$tmp/asha.sqlite" \
          "${sweep_args[@]}" --set 'sweep.early_stopping={rungs: [10], reduction_factor: 2}' 2>&1) \
        || fail "ASHA across processes: exit $?: $out"
    sweep_dump "$tmp/asha.sqlite" >"$tmp/asha.txt"
    pruned=$(grep -c "^trial .* pruned steps 10 .*early stopping at rung 10" "$tmp/asha.txt")
    [[ $pruned -ge 1 ]] || fail "no trial pruned at rung 10: $(grep '^trial' "$tmp/asha.txt")"
    [[ $(grep -c "^trial .* finished steps $steps " "$tmp/asha.txt") -eq $((8 - pruned)) ]] \
        || fail "expected the others finished: $(grep '^trial' "$tmp/asha.txt")"
    # Every rank reads the corpus itself: a worker whose file at the corpus path differs (here
    # another file bind-mounted over it in the worker's own mount namespace) stops the sweep
    # with one message naming its rank and host. Needs unshare -m (root); skipped without it.
    if unshare -m true 2>/dev/null; then
      head -c 200000 "$src/resources/corpus/kjv-01-genesis.txt" >"$tmp/corpus.txt"
      { cat "$tmp/corpus.txt"; echo "one more line"; } >"$tmp/other.txt"
      corpus_args=("${sweep_args[@]}" --set "train_input.data_dir=[$tmp/corpus.txt]")
      out=$(timeout 120 "$mpirun" --oversubscribe -np 1 "$wafer" sweep "$tmp/sweep.yaml" \
            --db "$tmp/mismatch.sqlite" "${corpus_args[@]}" : -np 1 \
            unshare -m sh -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"' sh \
            "$tmp/other.txt" "$tmp/corpus.txt" "$wafer" sweep "$tmp/sweep.yaml" \
            --db "$tmp/mismatch.sqlite" "${corpus_args[@]}" 2>&1); code=$?
      [[ $code -ne 124 ]] || fail "the sweep hung on a corpus mismatch: $out"
      expect_in "rank 1 on $(hostname) reads a different corpus than rank 0" "$out"
    else
      echo "corpus mismatch across processes: skipped (unshare -m is not permitted here)"
    fi
    # A sweep refused on rank 0 releases the workers (no hang), and so does --help.
    out=$(timeout 60 "$mpirun" --oversubscribe -np 2 "$wafer" sweep "$tmp/nothing.yaml" 2>&1); code=$?
    [[ $code -ne 124 ]] || fail "the workers hung after rank 0 refused the sweep"
    [[ $code -ne 0 ]] || fail "a missing sweep file ran: $out"
    timeout 60 "$mpirun" --oversubscribe -np 2 "$wafer" sweep --help >/dev/null 2>&1 \
        || fail "sweep --help under mpirun: exit $?"
    exit 0
  fi
  # A worker killed in the middle of its trial, with recovery: the sweep goes on without it. The
  # kill must land while rank 2 runs a trial; on a fast machine it can land between two of its
  # trials (or after its last), and then no trial is lost: that attempt proves nothing, so the
  # scenario runs again (at most 4 times).
  lost=""
  for attempt in 1 2 3 4; do
    rm -f "$tmp/rec.sqlite"*
    "$mpirun" --oversubscribe --mca orte_enable_recovery 1 -np 3 "$wafer" sweep "$tmp/sweep.yaml" \
        --db "$tmp/rec.sqlite" "${sweep_args[@]}" --worker-timeout 3 >"$tmp/rec.jsonl" 2>"$tmp/rec.err" &
    job=$!
    for _ in $(seq 1 600); do [[ $(trial_runs "$tmp/rec.sqlite") -ge 3 ]] && break; sleep 0.05; done
    victim=$(rank2 $job)
    [[ -n $victim ]] || { kill -9 $job; fail "no rank 2 under mpirun $job"; }
    kill -9 "$victim"
    wait $job || fail "the sweep did not survive a lost worker: exit $?: $(cat "$tmp/rec.err")"
    lost=$(grep -o "rank 2 on .* stopped answering during trial [0-9]*; the trial runs again" \
           "$tmp/rec.err" | grep -o "trial [0-9]*" | grep -o "[0-9]*") && break
    echo "attempt $attempt: rank 2 was killed between trials; again"
  done
  [[ -n $lost ]] || fail "no trial taken back from the killed rank 2 in 4 attempts: $(cat "$tmp/rec.err")"
  [[ $(grep -c '"event":"trial"' "$tmp/rec.jsonl") -eq 8 ]] || fail "expected 8 trials: $(cat "$tmp/rec.jsonl")"
  sweep_dump "$tmp/rec.sqlite" >"$tmp/rec.txt"
  diff "$tmp/one.txt" "$tmp/rec.txt" >"$tmp/diff" || fail "the sweep differs: $(head -20 "$tmp/diff")"
  # The lost trial's first run, if rank 2 had recorded it before the kill, is shown failed (the
  # kill can also land between the trial's hand-over and its run's record: then only the rerun).
  out=$("$wafer" runs list --db "$tmp/rec.sqlite" 2>&1)
  if [[ $(grep -cE "#$lost: " <<<"$out") -gt 1 ]]; then
    grep -qE "#$lost: .* failed" <<<"$out" || fail "trial $lost's first run is not shown failed: $out"
  fi
  [[ $(grep -cE "#$lost: .* finished" <<<"$out") -eq 1 ]] || fail "trial $lost's rerun is not shown finished: $out"
  # Without recovery mpirun ends the job; the sweep resumes in one process.
  "$mpirun" --oversubscribe -np 3 "$wafer" sweep "$tmp/sweep.yaml" --db "$tmp/end.sqlite" \
      "${sweep_args[@]}" >"$tmp/end.jsonl" 2>"$tmp/end.err" &
  job=$!
  for _ in $(seq 1 600); do [[ $(trial_runs "$tmp/end.sqlite") -ge 3 ]] && break; sleep 0.05; done
  victim=$(rank2 $job)
  [[ -n $victim ]] || { kill -9 $job; fail "no rank 2 under mpirun $job"; }
  kill -9 "$victim"
  wait $job && fail "mpirun went on without recovery: $(cat "$tmp/end.err")"
  out=$("$wafer" sweep --resume 1 --db "$tmp/end.sqlite" --json 2>&1) || fail "resume: exit $?: $out"
  sweep_dump "$tmp/end.sqlite" >"$tmp/end.txt"
  diff "$tmp/one.txt" "$tmp/end.txt" >"$tmp/diff" || fail "the resumed sweep differs: $(head -20 "$tmp/diff")" ;;
sweep_errors)
  # A typo in a swept key gets the config's did-you-mean; a sweep above max_trials needs --yes.
  printf 'sweep:\n  base: %s\n  parameters:\n    model.hiden_size: [32, 64]\n' \
      "$src/presets/gpt-nano.yaml" >"$tmp/typo.yaml"
  out=$("$wafer" sweep "$tmp/typo.yaml" --db "$db" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "expected exit 1 for a bad key, got $code: $out"
  expect_in "sweep.parameters.model.hiden_size" "$out"
  expect_in "did you mean model.hidden_size" "$out"
  out=$("$wafer" sweep "$src/presets/mup-sweep.yaml" --db "$db" \
        --set sweep.parametrization=[sp] --set sweep.max_trials=10 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "expected exit 1 without --yes, got $code: $out"
  expect_in "96 trials" "$out"
  expect_in "--yes" "$out"
  out=$("$wafer" sweep "$src/presets/gpt-nano.yaml" --db "$db" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "expected exit 1 for a config without a sweep, got $code"
  expect_in "no sweep: section" "$out"
  if [[ -e "$db" ]]; then
    "$wafer" runs list --json --db "$db" | grep -q '"kind":"sweep' \
        && fail "a refused sweep must not leave runs behind"
  fi ;;
config_reference)
  # The user guide's config reference (docs/config-reference.md, between the "Generated by" line
  # and the next heading or the end) must be exactly what the field declarations say today.
  "$wafer" fields --markdown >"$tmp/fields.md" || fail "exit $?"
  grep -q "model.hidden_size" "$tmp/fields.md" || fail "no fields printed"
  python3 - "$src/docs/config-reference.md" "$tmp/fields.md" <<'PY2' || fail "docs/config-reference.md is stale: run scripts/update_config_reference.py $wafer"
import sys
guide, table = (open(p).read().split("\n") for p in sys.argv[1:])
starts = [i for i, l in enumerate(guide) if l.startswith("Generated by `wafer fields --markdown`")]
if len(starts) != 1:
    sys.exit("expected one 'Generated by' line, found %d" % len(starts))
end = next((i for i in range(starts[0] + 1, len(guide)) if guide[i].startswith("#")), len(guide))
sys.exit(0 if "\n".join(guide[starts[0] + 1:end]).strip() == "\n".join(table).strip() else 1)
PY2
  ;;
coord_check)
  # The muP preset, reduced: SP's activations grow with width, muP's stay flat (exit 0 = PASS).
  short=(--set train_input.max_sequence_length=32 --set train_input.batch_size=4)
  out=$("$wafer" coord-check "$src/presets/mup-base.yaml" --widths 32,64,128 --steps 3 \
        "${short[@]}" --json --out "$tmp/coord.csv") || fail "exit $? $out"
  expect_in '"event":"coord"' "$out"
  expect_in '"parametrization":"mup","width":128' "$out"
  expect_in '"event":"slope"' "$out"
  expect_in '"event":"verdict","pass":true' "$out"
  [[ $(grep -c '"event":"coord"' <<<"$out") -eq 72 ]] || fail "expected 2 x 3 x 3 x 4 rows"
  [[ $(wc -l <"$tmp/coord.csv") -eq 73 ]] || fail "expected a header and 72 CSV rows"
  expect_in "parametrization,width,step,layer,mean_abs" "$(head -1 "$tmp/coord.csv")"
  out=$("$wafer" coord-check "$src/presets/mup-base.yaml" --widths 32,64 --steps 1 \
        "${short[@]}" 2>/dev/null) || fail "text exit $? $out"
  expect_in "verdict: PASS" "$out"
  expect_in "attn_logits" "$out" ;;
coord_check_preset)
  # The full default check of the preset (widths 32..256, 10 steps; 7 s on 2 idle cores):
  # muP passes and SP's worst slope shows activations growing about like width.
  out=$("$wafer" coord-check "$src/presets/mup-base.yaml" --json) || fail "exit $? $out"
  verdict=$(grep '"event":"verdict"' <<<"$out")
  expect_in '"pass":true' "$verdict"
  python3 - "$verdict" <<'PY' || fail "slopes out of range: $verdict"
import json, sys
v = json.loads(sys.argv[1])
assert abs(v["worst_mup_slope"]) < 0.15, v
assert v["worst_sp_slope"] > 0.8, v
PY
  ;;
coord_check_errors)
  out=$("$wafer" coord-check "$src/presets/mup-base.yaml" --widths 32,40 2>&1); code=$?
  [[ $code -eq 2 ]] || fail "width 40: expected exit 2, got $code"
  expect_in "not a multiple of the head size 16" "$out"
  out=$("$wafer" coord-check "$src/presets/mup-base.yaml" --widths 16,32 2>&1); code=$?
  [[ $code -eq 2 ]] || fail "width below the base: expected exit 2, got $code"
  expect_in "below model.mup_base_hidden_size (32)" "$out"
  out=$("$wafer" coord-check "$src/presets/mup-base.yaml" --widths 32,x 2>&1); code=$?
  [[ $code -eq 2 ]] || fail "bad --widths: expected exit 2, got $code"
  expect_in "positive integers" "$out"
  out=$("$wafer" coord-check "$src/presets/gpt-nano.yaml" 2>&1); code=$?
  [[ $code -eq 2 ]] || fail "muP off: expected exit 2, got $code"
  expect_in "muP off" "$out"
  out=$("$wafer" coord-check "$src/presets/mup-base.yaml" --set model.mup_base_hidden_size=64 \
        2>&1); code=$?
  [[ $code -eq 1 ]] || fail "invalid config: expected exit 1, got $code"
  expect_in "mup_base_hidden_size (64) is larger than model.hidden_size (32)" "$out" ;;
hf_import_export)
  # Hugging Face folders written by an independent writer (tests/app/hf_tool.py: Python's
  # standard library, safetensors laid out by hand) in fp16, bf16 and fp32, imported, exported
  # back, read by the independent reader, and imported again: every tensor the same.
  hf="/usr/bin/python3 $src/tests/app/hf_tool.py"
  $hf write "$tmp/hf16" --dtype F16 --prefix --buffers || fail "writer"
  $hf write "$tmp/hf-bf16" --dtype BF16 --seed 2 || fail "writer"
  $hf write "$tmp/hf32" --dtype F32 --untied --inner 40 --seed 3 || fail "writer"
  for name in hf16 hf-bf16 hf32; do
    out=$("$wafer" import "$tmp/$name" --out "$tmp/$name-ours") || fail "import $name exit $? $out"
    expect_in "model folder: $tmp/$name-ours" "$out"
    $hf compare "$tmp/$name" "$tmp/$name-ours/model.safetensors" || fail "$name: imported tensors differ"
    out=$("$wafer" export "$tmp/$name-ours" --format hf --out "$tmp/$name-export") \
        || fail "export $name exit $? $out"
    expect_in "tokenizer: GPT-2 BPE" "$out"
    grep -q '"GPT2LMHeadModel"' "$tmp/$name-export/config.json" || fail "no architectures"
    $hf compare "$tmp/$name" "$tmp/$name-export/model.safetensors" || fail "$name: exported tensors differ"
    cmp -s "$tmp/$name/vocab.json" "$tmp/$name-export/vocab.json" || \
      python3 -c "import json,sys; sys.exit(json.load(open('$tmp/$name/vocab.json')) != json.load(open('$tmp/$name-export/vocab.json')))" \
      || fail "$name: vocab.json changed"
    "$wafer" import "$tmp/$name-export" --out "$tmp/$name-back" >/dev/null || fail "re-import $name"
    $hf same-values "$tmp/$name-ours/model.safetensors" "$tmp/$name-back/model.safetensors" \
        || fail "$name: import -> export -> import changed tensors"
  done
  expect_in "ignored 4 attention buffer" "$("$wafer" import "$tmp/hf16" --out "$tmp/again")"
  # A Hugging Face folder is a fine-tune base as it is, no import needed.
  for i in $(seq 1 40); do echo "the theme of the thing is in the rest at the end $i"; done >"$tmp/new.txt"
  out=$("$wafer" finetune --base "$tmp/hf16" --data "$tmp/new.txt" --max-steps 3 --db "$db" \
        --set train_input.batch_size=2) || fail "finetune of an HF folder exit $? $out"
  expect_in "fine-tune Hugging Face folder" "$out"
  expect_in "peak lr 0.0002" "$out"
  out=$("$wafer" sample "$tmp/hf16-ours" --prompt "the " --max-tokens 8 --seed 1) || fail "sample exit $?"
  ;;
hf_sharded_cache)
  # Issue 33: save_pretrained's sharded layout (model-0000N-of-0000M.safetensors + the index,
  # split by tests/app/hf_tool.py with the bytes untouched) imports to exactly the tensors of the
  # single file; the folder laid out in a Hugging Face cache (blobs, snapshot symlinks,
  # refs/main) is listed, imported, fine-tuned and scored by its model id, with no network.
  hf="/usr/bin/python3 $src/tests/app/hf_tool.py"
  $hf write "$tmp/hf" --dtype BF16 --prefix --buffers --seed 4 || fail "writer"
  $hf shard "$tmp/hf" "$tmp/hf-sharded" 3 || fail "shard"
  out=$("$wafer" import "$tmp/hf-sharded" --out "$tmp/ours") || fail "import sharded exit $? $out"
  expect_in "weights read from 3 shard(s) named by model.safetensors.index.json" "$out"
  $hf compare "$tmp/hf" "$tmp/ours/model.safetensors" || fail "the sharded import differs"
  cp -r "$tmp/hf-sharded" "$tmp/hf-broken"
  rm "$tmp/hf-broken/model-00002-of-00003.safetensors"
  out=$("$wafer" import "$tmp/hf-broken" --out "$tmp/broken-out" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "missing shard: expected exit 1, got $code: $out"
  expect_in "shard model-00002-of-00003.safetensors is missing" "$out"
  [[ ! -e $tmp/broken-out ]] || fail "a failed import left a folder"

  export HF_HUB_CACHE="$tmp/hub"
  out=$("$wafer" import --list-cached) || fail "list of an empty cache exit $?"
  expect_in "no models cached" "$out"
  out=$("$wafer" import tiny-org/tiny-gpt2 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "uncached id: expected exit 1, got $code: $out"
  expect_in "tiny-org/tiny-gpt2 is not in the Hugging Face cache (looked in $tmp/hub, from HF_HUB_CACHE); download it with \`huggingface-cli download tiny-org/tiny-gpt2\` or pass a folder" "$out"
  snapshot=$($hf cache "$tmp/hf-sharded" "$tmp/hub" tiny-org/tiny-gpt2) || fail "cache layout"
  [[ -L $snapshot/model.safetensors.index.json ]] || fail "the snapshot's files are not symlinks"
  out=$("$wafer" import --list-cached) || fail "list exit $?"
  expect_in "tiny-org/tiny-gpt2  GPT2LMHeadModel" "$out"
  expect_in "usable" "$out"
  out=$("$wafer" import --list-cached --json) || fail "list --json exit $?"
  python3 -c "import json,sys; m=json.loads(sys.argv[1])['models']; assert len(m)==1 and m[0]['id']=='tiny-org/tiny-gpt2' and m[0]['usable'] and m[0]['architecture']=='GPT2LMHeadModel' and m[0]['bytes']>0 and m[0]['parameters']>0, m" "$out" \
      || fail "list --json: $out"
  out=$("$wafer" import tiny-org/tiny-gpt2) || fail "import by id exit $? $out"
  expect_in "imported tiny-org/tiny-gpt2 ($snapshot)" "$out"
  expect_in "model folder: $XDG_DATA_HOME/wafer-studio/models/tiny-gpt2" "$out"
  $hf compare "$tmp/hf" "$XDG_DATA_HOME/wafer-studio/models/tiny-gpt2/model.safetensors" \
      || fail "the import by id differs"
  for i in $(seq 1 40); do echo "the theme of the thing is in the rest at the end $i"; done >"$tmp/new.txt"
  # A fine-tune starts from the sharded snapshot as it is (runconfig.checkpoint_path: the index).
  out=$("$wafer" finetune --base tiny-org/tiny-gpt2 --data "$tmp/new.txt" --max-steps 2 --db "$db" \
        --set train_input.batch_size=2 --dry-run) || fail "finetune --dry-run by id exit $? $out"
  expect_in "fine-tune Hugging Face folder $snapshot" "$out"
  expect_in "checkpoint_path: \"$snapshot/model.safetensors.index.json\"" "$out"
  out=$("$wafer" finetune --base tiny-org/tiny-gpt2 --data "$tmp/new.txt" --max-steps 2 --db "$db" \
        --set train_input.batch_size=2) || fail "finetune by id exit $? $out"
  expect_in "fine-tune result" "$out"
  out=$("$wafer" eval tiny-org/tiny-gpt2 --data "$tmp/new.txt" --json) || fail "eval by id exit $? $out"
  expect_in '"event":"eval"' "$out"
  out=$("$wafer" sample tiny-org/tiny-gpt2 --prompt "the " --max-tokens 4 --seed 1 --json) \
      || fail "sample by id exit $? $out"
  expect_in '"tokens":4' "$out"
  expect_in "\"path\":\"$snapshot/model.safetensors.index.json\"" "$out"
  # An existing folder spelled like the id wins over the cache.
  mkdir -p "$tmp/cwd/tiny-org" && cp -r "$tmp/hf" "$tmp/cwd/tiny-org/tiny-gpt2"
  out=$(cd "$tmp/cwd" && "$wafer" import tiny-org/tiny-gpt2 --out "$tmp/local") || fail "local exit $? $out"
  expect_in "imported tiny-org/tiny-gpt2:" "$out"
  unset HF_HUB_CACHE ;;
eval)
  # Issue 33: `wafer eval` on a trained run's model, by folder and by run id, and on the shipped
  # base model. The figures agree with their definitions (perplexity = exp(loss), bits per byte
  # = total nats / ln 2 / bytes scored, scored tokens = tokens - 1), the batch changes them only
  # by float rounding,
  # --seq-len sets the windows; bad input is refused naming the problem.
  "$wafer" train "$src/presets/gpt-nano.yaml" --max-steps 3 --json --db "$db" "${tiny_args[@]}" \
      --set "runconfig.model_dir=$tmp/model" >/dev/null || fail "train exit $?"
  head -c 3000 "$src/resources/corpus/$(ls "$src/resources/corpus" | grep -m1 '\.txt$')" >"$tmp/text.txt"
  [[ -s $tmp/text.txt ]] || fail "no corpus text to score"
  a=$("$wafer" eval "$tmp/model" --data "$tmp/text.txt" --json --seq-len 16) || fail "eval exit $? $a"
  b=$("$wafer" eval 1 --db "$db" --data "$tmp/text.txt" --json --seq-len 16 --batch 7) || fail "eval by id exit $? $b"
  python3 - "$a" "$b" <<'PY' || fail "eval figures: $a / $b"
import json, math, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert a["scored_tokens"] == a["tokens"] - 1 and a["tokens"] > 100, a
assert a["seq_len"] == 16 and a["windows"] == -(-a["scored_tokens"] // 16), a
assert abs(a["loss"] - a["total_nats"] / a["scored_tokens"]) < 1e-9 * a["loss"], a
assert abs(a["perplexity"] - math.exp(a["loss"])) < 1e-9 * a["perplexity"], a
assert abs(a["bits_per_byte"] - a["total_nats"] / math.log(2) / a["scored_bytes"]) < 1e-12, a
assert 0 < a["scored_bytes"] <= a["text_bytes"] == 3000, a
assert b["batch"] == 7 and abs(b["total_nats"] - a["total_nats"]) < 1e-6 * a["total_nats"], (a, b)
PY
  out=$("$wafer" eval "$tmp/model" --data "$tmp/text.txt") || fail "text eval exit $?"
  expect_in "bits per byte" "$out"
  expect_in "perplexity" "$out"
  out=$("$wafer" eval base --data "$tmp/text.txt" --max-tokens 200 --json) || fail "eval base exit $? $out"
  python3 -c "import json,sys; j=json.loads(sys.argv[1]); assert j['scored_tokens']==200 and j['seq_len']==128 and 0<j['bits_per_byte']<8, j" "$out" \
      || fail "eval base: $out"
  out=$("$wafer" eval "$tmp/model" --data "$tmp/none.txt" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "missing file: expected exit 1, got $code: $out"
  expect_in "--data $tmp/none.txt: no such file" "$out"
  : >"$tmp/empty.txt"
  out=$("$wafer" eval "$tmp/model" --data "$tmp/empty.txt" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "empty text: expected exit 1, got $code: $out"
  expect_in "the text is empty" "$out"
  out=$("$wafer" eval "$tmp/model" --data "$tmp/text.txt" --seq-len 4096 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "long context: expected exit 1, got $code: $out"
  expect_in "longer than the model's" "$out"
  out=$("$wafer" eval "$tmp/no-model" --data "$tmp/text.txt" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "bad model: expected exit 1, got $code: $out"
  expect_in "no-model" "$out"
  mkdir "$tmp/junk" && echo '{"model_type": "bert"}' >"$tmp/junk/config.json"
  out=$("$wafer" eval "$tmp/junk" --data "$tmp/text.txt" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "not a model: expected exit 1, got $code: $out"
  out=$("$wafer" eval --help) || fail "help"
  expect_in "non-overlapping windows" "$out" ;;
torch_import)
  # pytorch_model.bin (torch.save's zip format) written by hand by tests/app/torch_tool.py (Python's
  # standard library: zipfile and the pickle's opcodes, with a tied lm_head sharing wte's storage,
  # ln_1 weight and bias sharing one storage, uint8 attention masks): imported, it gives exactly
  # the weights the model.safetensors of the same model gives, in fp16, bf16 and fp32.
  hf="/usr/bin/python3 $src/tests/app/hf_tool.py"
  tt="/usr/bin/python3 $src/tests/app/torch_tool.py"
  $hf write "$tmp/hf16" --dtype F16 --prefix --buffers || fail "writer"
  $hf write "$tmp/hf-bf16" --dtype BF16 --seed 2 || fail "writer"
  $hf write "$tmp/hf32" --dtype F32 --untied --inner 40 --seed 3 || fail "writer"
  for name in hf16 hf-bf16 hf32; do
    $tt write "$tmp/$name" "$tmp/$name-pt" || fail "torch writer $name"
    [[ -f $tmp/$name-pt/pytorch_model.bin && ! -e $tmp/$name-pt/model.safetensors ]] || fail "fixture"
    out=$("$wafer" import "$tmp/$name-pt" --out "$tmp/$name-pt-ours") || fail "import $name-pt exit $? $out"
    expect_in "weights read from pytorch_model.bin" "$out"
    expect_in "nothing in it was executed" "$out"
    "$wafer" import "$tmp/$name" --out "$tmp/$name-st-ours" >/dev/null || fail "import $name exit $?"
    $hf same-values "$tmp/$name-st-ours/model.safetensors" "$tmp/$name-pt-ours/model.safetensors" \
        || fail "$name: pytorch_model.bin and model.safetensors import differently"
    $hf compare "$tmp/$name" "$tmp/$name-pt-ours/model.safetensors" || fail "$name: tensors differ"
  done
  expect_in "tensors 29 x F16" "$("$wafer" import "$tmp/hf16-pt" --out "$tmp/again")"
  # The file itself names its folder.
  "$wafer" import "$tmp/hf32-pt/pytorch_model.bin" --out "$tmp/by-file" >/dev/null || fail "import by file"
  $hf same-values "$tmp/hf32-st-ours/model.safetensors" "$tmp/by-file/model.safetensors" || fail "by file"
  out=$("$wafer" import "$tmp/hf-bf16-pt/pytorch_model.bin") || fail "import by file to the default folder"
  expect_in "model folder: $XDG_DATA_HOME/wafer-studio/models/hf-bf16-pt" "$out"
  # A folder holding only pytorch_model.bin is a fine-tune base as it is: the same run as from the
  # model.safetensors folder of the same model.
  for i in $(seq 1 40); do echo "the theme of the thing is in the rest at the end $i"; done >"$tmp/new.txt"
  for name in hf16 hf16-pt; do
    out=$("$wafer" finetune --base "$tmp/$name" --data "$tmp/new.txt" --max-steps 2 --db "$db" \
          --set train_input.batch_size=2 --set "runconfig.model_dir=$tmp/ft-$name") \
        || fail "finetune of $name exit $? $out"
    expect_in "fine-tune Hugging Face folder" "$out"
  done
  $hf same-values "$tmp/ft-hf16/model.safetensors" "$tmp/ft-hf16-pt/model.safetensors" \
      || fail "fine-tunes from model.safetensors and pytorch_model.bin differ"
  # Real PyTorch, where it is installed: it reads the hand-written files as written, and a file
  # torch.save itself wrote imports to the same weights.
  $tt torch-load "$tmp/hf16-pt/pytorch_model.bin" "$tmp/hf16" "$tmp/hf-bf16-pt/pytorch_model.bin" \
      "$tmp/hf-bf16" "$tmp/hf32-pt/pytorch_model.bin" "$tmp/hf32"; code=$?
  if [[ $code -eq 77 ]]; then
    echo "PyTorch not installed: the cross-check against torch.save is skipped"
  else
    [[ $code -eq 0 ]] || fail "torch.load disagrees with the hand-written files"
    $tt torch-save "$tmp/hf16" "$tmp/hf16-torch" "$tmp/hf-bf16" "$tmp/hf-bf16-torch" \
        "$tmp/hf32" "$tmp/hf32-torch" || fail "torch.save"
    for name in hf16 hf-bf16 hf32; do
      "$wafer" import "$tmp/$name-torch" --out "$tmp/$name-torch-ours" >/dev/null \
          || fail "import of torch.save's $name"
      $hf same-values "$tmp/$name-st-ours/model.safetensors" \
          "$tmp/$name-torch-ours/model.safetensors" || fail "$name: torch.save file imports differently"
    done
  fi ;;
torch_refusals)
  # Hostile or damaged pytorch_model.bin files: each refused naming what it found, no output
  # folder, and nothing run (the os.system pickle would create "pwned").
  hf="/usr/bin/python3 $src/tests/app/hf_tool.py"
  tt="/usr/bin/python3 $src/tests/app/torch_tool.py"
  $hf write "$tmp/hf" --dtype F16 --prefix --buffers || fail "writer"
  refused() {  # refused VARIANT NEEDLE
    $tt write "$tmp/hf" "$tmp/$1" --variant "$1" || fail "torch writer $1"
    out=$("$wafer" import "$tmp/$1" --out "$tmp/out" 2>&1); code=$?
    [[ $code -eq 1 ]] || fail "expected exit 1 for $1, got $code: $out"
    grep -qF -- "$2" <<<"$out" || fail "$1: expected '$2' in: $out"
    [[ ! -e $tmp/out ]] || fail "$1: an output folder was left behind"
    [[ ! -e $tmp/$1/pwned ]] || fail "$1: the pickle ran"
  }
  refused os-system "byte 2 (opcode GLOBAL): global os.system is not part of a PyTorch state dict"
  refused os-system "nothing in it was run"
  refused os-system "convert it to safetensors"
  refused stack-global "(opcode STACK_GLOBAL): global builtins.eval"
  refused inst "(opcode INST): it creates an arbitrary object"
  refused unknown-opcode "byte 2 (opcode 0xff): not a pickle opcode"
  refused truncated "not a readable zip archive"
  refused truncated "download it again"
  refused short-storage "tensor transformer.h.0.attn.c_proj.weight needs elements [0, 256) of storage"
  refused short-data "holds 2044 bytes but the pickle declares 1024 elements of HalfStorage (2048 bytes)"
  refused overlap "tensors transformer.h.0.ln_2.bias (elements [0, 16)) and transformer.h.1.ln_2.bias (elements [8, 24)) overlap"
  refused inconsistent "is declared as HalfStorage of 16 elements and again as FloatStorage"
  refused missing-storage "is missing from the archive"
  refused noncontiguous "tensor transformer.h.0.attn.c_proj.weight is not contiguous (size [16, 16], stride [1, 16])"
  refused legacy "legacy checkpoint format"
  # A fine-tune from a hostile folder is refused the same way.
  out=$("$wafer" finetune --base "$tmp/os-system" --data "$src/README.md" --dry-run --db "$db" 2>&1) \
      && fail "finetune of a hostile base must fail"
  expect_in "global os.system" "$out" ;;
hf_byte_export)
  # A byte-tokenizer run exports a vocab.json of the 256 byte symbols, and imports back as byte.
  "$wafer" train "$src/presets/gpt-nano.yaml" --max-steps 2 --db "$db" "${tiny_args[@]}" \
      --set "runconfig.model_dir=$tmp/model" >/dev/null 2>&1 || fail "train exit $?"
  out=$("$wafer" export 1 --db "$db" --format hf --out "$tmp/exported") || fail "export exit $? $out"
  expect_in "256 byte symbols" "$out"
  /usr/bin/python3 "$src/tests/app/hf_tool.py" check-byte-vocab "$tmp/exported" || fail "byte vocab"
  out=$("$wafer" import "$tmp/exported" --out "$tmp/back" --json) || fail "import exit $? $out"
  expect_in '"tokenizer":"byte"' "$out"
  /usr/bin/python3 "$src/tests/app/hf_tool.py" same-values "$tmp/model/model.safetensors" \
      "$tmp/back/model.safetensors" || fail "round trip changed tensors"
  # A checkpoint folder exports too (its tokenizer is the run folder's).
  "$wafer" export "$tmp/model/checkpoint-2" --format hf --out "$tmp/from-checkpoint" >/dev/null \
      || fail "checkpoint export exit $?"
  /usr/bin/python3 "$src/tests/app/hf_tool.py" same-values "$tmp/model/model.safetensors" \
      "$tmp/from-checkpoint/model.safetensors" || fail "checkpoint export differs"
  # A fine-tune of run 1 by id links to it as its parent.
  for i in $(seq 1 30); do echo "new words for an old model, line $i"; done >"$tmp/new.txt"
  "$wafer" finetune --base 1 --db "$db" --data "$tmp/new.txt" --max-steps 2 --json \
      --set train_input.max_sequence_length=32 --set runconfig.model_dir="$tmp/ft" >/dev/null \
      || fail "finetune exit $?"
  out=$("$wafer" runs show 2 --db "$db") || fail "runs show exit $?"
  expect_in "kind     finetune" "$out"
  expect_in "parent   run 1" "$out" ;;
tokenize)
  # `wafer tokenize` on real Hugging Face tokenizer files (tests/engine/tokenizer/fixtures/hf):
  # the ids the tokenizers library gave (expected.json), a folder or the file itself, --json,
  # --add-special from tokenizer_config.json, the readable view, and every error a user can hit.
  hf="$src/tests/engine/tokenizer/fixtures/hf"
  mkdir -p "$tmp/qwen" "$tmp/yi"
  gzip -dc "$hf/qwen2_5/tokenizer.json.gz" >"$tmp/qwen/tokenizer.json"
  cp "$hf/qwen2_5/tokenizer_config.json" "$tmp/qwen/"
  gzip -dc "$hf/yi/tokenizer.json.gz" >"$tmp/yi/tokenizer.json"
  expected() {  # expected.json ids of tokenizer $1 for text number $2
    python3 -c 'import json,sys; e=json.load(open(sys.argv[1])); print(json.dumps(e["tokenizers"][sys.argv[2]]["without_special"][int(sys.argv[3])]).replace(" ", ""))' \
      "$hf/expected.json" "$1" "$2"
  }
  text() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[int(sys.argv[2])], end="")' "$hf/texts.json" "$1"; }
  for i in 8 16; do
    out=$("$wafer" tokenize --tokenizer "$tmp/qwen" --json "$(text $i)") || fail "qwen text $i: exit $?"
    [[ "$out" == "$(expected qwen2_5 $i)" ]] || fail "qwen text $i: got $out, library $(expected qwen2_5 $i)"
    text $i >"$tmp/text.txt"
    out=$("$wafer" tokenize --tokenizer "$tmp/yi/tokenizer.json" --json --file "$tmp/text.txt") \
      || fail "yi text $i: exit $?"
    [[ "$out" == "$(expected yi $i)" ]] || fail "yi text $i: got $out, library $(expected yi $i)"
  done
  # tokenizer_config.json's add_bos_token decides what --add-special adds.
  printf '{"add_bos_token": true, "bos_token": "<|startoftext|>"}' >"$tmp/yi/tokenizer_config.json"
  out=$("$wafer" tokenize --tokenizer "$tmp/yi" --json --add-special "Hello") || fail "bos: exit $?"
  [[ "$out" == "[1,$(expected yi 0 | tr -d '[]' | cut -d, -f1)]" ]] || fail "--add-special gave $out"
  out=$("$wafer" tokenize --tokenizer "$tmp/qwen" "Hello, world") || fail "text view: exit $?"
  expect_in "9707 11 1879" "$out"
  expect_in "tokens, 12 bytes (hf tokenizer)" "$out"
  expect_in "Ġworld" "$out"
  # GPT-2 vocab.json + merges.txt folders work as before.
  out=$("$wafer" tokenize --tokenizer "$src/tests/engine/tokenizer/fixtures/gpt2_mini" --json "hello") \
    || fail "gpt2 folder: exit $?"
  expect_in "^\[" "$out"
  # Errors: invalid UTF-8, a missing path, a file that is not a tokenizer, unsupported features.
  printf 'ok \xff bad' >"$tmp/bad.txt"
  out=$("$wafer" tokenize --tokenizer "$tmp/yi" --file "$tmp/bad.txt" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "invalid UTF-8: expected exit 1, got $code: $out"
  expect_in "not valid UTF-8 at byte offset 3" "$out"
  out=$("$wafer" tokenize --tokenizer "$tmp/nowhere" "x" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "missing path: expected exit 1, got $code: $out"
  expect_in "no such file or folder" "$out"
  out=$("$wafer" tokenize --tokenizer "$tmp/text.txt" "x" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "not a tokenizer: expected exit 1, got $code: $out"
  expect_in "not a tokenizer file" "$out"
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); j["normalizer"]={"type":"Sequence","normalizers":[{"type":"Lowercase"}]}; json.dump(j, open(sys.argv[2],"w"))' \
    "$tmp/yi/tokenizer.json" "$tmp/lower.json"
  out=$("$wafer" tokenize --tokenizer "$tmp/lower.json" "x" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "unsupported: expected exit 1, got $code: $out"
  expect_in 'normalizer.normalizers\[0\].type: "Lowercase" is not supported' "$out"
  out=$("$wafer" tokenize --tokenizer "$tmp/qwen" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "no text: expected exit 1, got $code: $out"
  expect_in "nothing to tokenize" "$out" ;;
tokenize_chat)
  # `wafer tokenize --chat`: a conversation rendered with the model's own chat template (Qwen2.5's,
  # from its tokenizer_config.json) or the built-in ChatML (the shipped base, whose tokenizer gains
  # ChatML's special tokens), its ids exactly the tokenizer's encode of the rendered text, and its
  # mask on the assistant's answers only; --add-generation-prompt; every error a user can hit.
  hf="$src/tests/engine/tokenizer/fixtures/hf"
  mkdir -p "$tmp/qwen"
  gzip -dc "$hf/qwen2_5/tokenizer.json.gz" >"$tmp/qwen/tokenizer.json"
  cp "$hf/qwen2_5/tokenizer_config.json" "$tmp/qwen/"
  cat >"$tmp/chat.json" <<'JSON'
{"messages": [{"role": "system", "content": "Answer in one word."},
              {"role": "user", "content": "Sky colour? 天空"},
              {"role": "assistant", "content": "Blue"},
              {"role": "user", "content": "Grass?"},
              {"role": "assistant", "content": "Green"}]}
JSON
  # The trained tokens' text, runs joined by |, and whether ids equal the plain encode.
  check_chat() {  # $1 tokenizer path, $2 the --chat --json output
    python3 - "$1" "$2" "$wafer" <<'PY'
import json, subprocess, sys
path, out, wafer = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
plain = subprocess.run([wafer, "tokenize", "--tokenizer", path, "--json", out["text"]],
                       capture_output=True, text=True, check=True).stdout.strip()
assert len(out["ids"]) == len(out["mask"]), "one mask entry per id"
runs, cur = [], []
for i, m in zip(out["ids"], out["mask"]):
    if m: cur.append(i)
    elif cur: runs.append(cur); cur = []
if cur: runs.append(cur)
print(json.dumps({"same_as_plain": json.loads(plain) == out["ids"], "runs": runs,
                  "template": out["template"], "text": out["text"]}))
PY
  }
  out=$("$wafer" tokenize --tokenizer "$tmp/qwen" --chat "$tmp/chat.json" --json) || fail "qwen chat: exit $?"
  got=$(check_chat "$tmp/qwen" "$out") || fail "qwen chat check: $got"
  expect_in '"same_as_plain": true' "$got"
  expect_in 'tokenizer_config.json' "$got"
  python3 -c 'import json,sys; t=json.loads(sys.argv[1])["text"]; w="<|im_start|>system\nAnswer in one word.<|im_end|>\n<|im_start|>user\nSky colour? 天空<|im_end|>\n<|im_start|>assistant\nBlue<|im_end|>\n"; assert t.startswith(w), t' "$got" \
    || fail "qwen chat: not the Qwen2.5 template's text"
  # Two trained runs, each the answer and <|im_end|> (151645) and the newline after it (198).
  runs=$(python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1])["runs"]))' "$got")
  blue=$("$wafer" tokenize --tokenizer "$tmp/qwen" --json "Blue<|im_end|>
") || fail "blue ids"
  green=$("$wafer" tokenize --tokenizer "$tmp/qwen" --json "Green<|im_end|>
") || fail "green ids"
  [[ "$runs" == "[${blue//,/, }, ${green//,/, }]" ]] || fail "qwen trained runs $runs, want [$blue, $green]"
  # The readable view marks the trained tokens.
  out=$("$wafer" tokenize --tokenizer "$tmp/qwen" --chat "$tmp/chat.json") || fail "qwen view: exit $?"
  expect_in "trained on (marked \*)" "$out"
  expect_in "^\* *151645 *<|im_end|>" "$out"
  # The shipped base has no template: ChatML, with its two special tokens after the vocabulary.
  out=$("$wafer" tokenize --tokenizer "$src/resources/base-model" --chat "$tmp/chat.json" --json) \
    || fail "base chat: exit $?"
  got=$(check_chat "$src/resources/base-model" "$out") || fail "base chat check: $got"
  expect_in '"template": "chatml"' "$got"
  python3 -c 'import json,sys; o=json.loads(sys.argv[1]); assert o["ids"][0] == 2048 and 2049 in o["ids"], o["ids"][:3]' "$out" \
    || fail "base chat: <|im_start|> and <|im_end|> are not the ids after the vocabulary"
  # A generation prompt for the assistant after the user's last message.
  python3 -c 'import json,sys; m=json.load(open(sys.argv[1]))["messages"][:4]; json.dump(m, open(sys.argv[2],"w"))' \
    "$tmp/chat.json" "$tmp/ask.json"
  out=$("$wafer" tokenize --tokenizer "$tmp/qwen" --chat "$tmp/ask.json" --add-generation-prompt --json) \
    || fail "generation prompt: exit $?"
  python3 -c 'import json,sys; o=json.loads(sys.argv[1]); assert o["text"].endswith("Grass?<|im_end|>\n<|im_start|>assistant\n"), o["text"]' "$out" \
    || fail "no generation prompt at the end"
  # Errors: not JSON, a message without its role, an unknown built-in, --chat with a text.
  printf '{"messages": [' >"$tmp/bad.json"
  out=$("$wafer" tokenize --tokenizer "$tmp/qwen" --chat "$tmp/bad.json" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "bad JSON: expected exit 1, got $code: $out"
  expect_in "bad.json: not valid JSON" "$out"
  printf '[{"content": "hi"}]' >"$tmp/norole.json"
  out=$("$wafer" tokenize --tokenizer "$tmp/qwen" --chat "$tmp/norole.json" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "no role: expected exit 1, got $code: $out"
  expect_in 'message 1 needs a string "role"' "$out"
  out=$("$wafer" tokenize --tokenizer "$tmp/qwen" --chat "$tmp/chat.json" --chat-template vicuna 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "unknown template: expected exit 1, got $code: $out"
  expect_in "chatml" "$out"
  out=$("$wafer" tokenize --tokenizer "$tmp/qwen" --chat "$tmp/chat.json" "text" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "chat and text: expected exit 1, got $code: $out"
  expect_in "not both" "$out" ;;
train_hf_tokenizer)
  # A run with a Hugging Face tokenizer (train_input.tokenizer.type hf, Yi's SentencePiece-style
  # file): it trains, its run folder carries tokenizer.json, and the folder tokenizes as the file
  # does; sampling from it works.
  mkdir -p "$tmp/yi"
  gzip -dc "$src/tests/engine/tokenizer/fixtures/hf/yi/tokenizer.json.gz" >"$tmp/yi/tokenizer.json"
  out=$("$wafer" train "$src/presets/gpt-nano.yaml" --max-steps 2 --db "$db" "${tiny_args[@]}" \
        --set train_input.tokenizer.type=hf --set "train_input.tokenizer.tokenizer_file=$tmp/yi/tokenizer.json" \
        --set eval_input.tokenizer.type=hf --set "eval_input.tokenizer.tokenizer_file=$tmp/yi/tokenizer.json" \
        --set model.vocab_size=64000 --set "runconfig.model_dir=$tmp/model" 2>&1) || fail "train: exit $? $out"
  expect_in "finished after 2 steps" "$out"
  [[ -s "$tmp/model/tokenizer.json" ]] || fail "the run folder has no tokenizer.json: $(ls "$tmp/model")"
  a=$("$wafer" tokenize --tokenizer "$tmp/model" --json "In the beginning God created") || fail "folder: exit $?"
  b=$("$wafer" tokenize --tokenizer "$tmp/yi/tokenizer.json" --json "In the beginning God created") || fail "file: exit $?"
  [[ "$a" == "$b" ]] || fail "run folder tokenizes as $a, the file as $b"
  out=$("$wafer" sample "$tmp/model" --prompt "In the beginning" --max-tokens 4 2>&1) || fail "sample: exit $? $out"
  # Fine-tuning that run keeps its tokenizer (type hf, the run folder's tokenizer.json).
  for i in $(seq 1 20); do echo "Weights stream from MemoryX onto the wafer, layer $i."; done >"$tmp/new.txt"
  out=$("$wafer" finetune --base "$tmp/model" --data "$tmp/new.txt" --dry-run --json --db "$db") \
      || fail "finetune dry run: exit $? $out"
  expect_in '"tokenizer":"hf"' "$out" ;;
hf_refusals)
  hf="/usr/bin/python3 $src/tests/app/hf_tool.py"
  refused() {  # refused FOLDER NEEDLE: import must exit 1 naming the problem, creating nothing
    out=$("$wafer" import "$1" --out "$tmp/out" 2>&1); code=$?
    [[ $code -eq 1 ]] || fail "expected exit 1 for $1, got $code: $out"
    expect_in "$2" "$out"
    [[ ! -e $tmp/out ]] || fail "an output folder was left behind"
  }
  $hf write "$tmp/a" && rm "$tmp/a/vocab.json"
  refused "$tmp/a" "vocab.json is missing"
  $hf write "$tmp/b" && printf '{"model_type": "gpt2", "n_embd": 16,' >"$tmp/b/config.json"
  refused "$tmp/b" "config.json: not valid JSON"
  $hf write "$tmp/c" && printf '{"model_type": "gpt2", "_name_or_path": "caf\xe9"}' >"$tmp/c/config.json"
  refused "$tmp/c" "not UTF-8"
  $hf write "$tmp/d" --activation relu
  refused "$tmp/d" '"activation_function" is "relu"'
  $hf write "$tmp/e" && sed -i 's/"n_embd": 16/"n_embd": 32/; s/"n_inner": null/"n_inner": 64/' "$tmp/e/config.json"
  refused "$tmp/e" "has shape"
  $hf write "$tmp/f" && sed -i 's/"n_layer": 2/"n_layer": 3/' "$tmp/f/config.json"
  refused "$tmp/f" "h.2.ln_1.weight (or transformer.h.2.ln_1.weight) is missing"
  $hf write "$tmp/g" && sed -i 's/"model_type": "gpt2"/"model_type": "mixtral"/' "$tmp/g/config.json"
  refused "$tmp/g" "model_type"
  $hf write "$tmp/h" && head -c 200 "$tmp/h/model.safetensors" >"$tmp/h/x" && mv "$tmp/h/x" "$tmp/h/model.safetensors"
  refused "$tmp/h" "model.safetensors"
  mkdir -p "$tmp/busy" && touch "$tmp/busy/mine"
  $hf write "$tmp/ok"
  out=$("$wafer" import "$tmp/ok" --out "$tmp/busy" 2>&1) && fail "a non-empty --out must be refused"
  expect_in "nothing is overwritten" "$out"
  out=$("$wafer" export 42 --db "$db" --format hf --out "$tmp/x" 2>&1) && fail "unknown run must fail"
  expect_in "run 42" "$out" ;;
finetune_base)
  # The shipped base model fine-tuned briefly on new text lowers the eval loss on its held-out
  # slice; frozen embeddings (the token table: its rotary positions have none) and blocks stay
  # bit-identical; the run is of kind finetune.
  base="$src/resources/base-model"
  [[ -f $base/model.safetensors ]] || fail "no shipped base model in $base"
  for i in $(seq 1 40); do
    echo "Wafer Studio streams the weights of each layer from MemoryX onto the wafer, layer $i."
    echo "Activations stay on the wafer while gradients stream back out to MemoryX."
  done >"$tmp/new.txt"
  out=$("$wafer" finetune --base "$base" --data "$tmp/new.txt" --dry-run --json --db "$db") \
      || fail "dry run exit $? $out"
  expect_in '"event":"finetune_plan"' "$out"
  expect_in '"tokenizer":"bpe"' "$out"
  # --lora 4: every base parameter frozen (5246208), peak LR 10 x the full fine-tune's: a third
  # of the base's 2e-3.
  lora=$("$wafer" finetune --base "$base" --data "$tmp/new.txt" --lora 4 --dry-run --json \
         --db "$db") || fail "lora dry run exit $? $lora"
  expect_in '"frozen_parameters":5246208' "$lora"
  expect_in '"peak_lr":0.006666666666666666,' "$lora"
  expect_in '"method":"lora"' "$lora"
  expect_in '"method":"full"' "$out"
  out=$("$wafer" finetune --base "$base" --data "$tmp/new.txt" --max-steps 30 --json --db "$db" \
        --freeze-embeddings --freeze-blocks 2 --set "runconfig.model_dir=$tmp/ft") \
      || fail "finetune exit $? $out"
  summary=$(tail -1 <<<"$out")
  python3 - "$summary" <<'PY' || fail "eval loss did not fall: $summary"
import json, sys
s = json.loads(sys.argv[1])
print("before %.4f after %.4f" % (s["initial_eval_loss"], s["final_eval_loss"]))
sys.exit(0 if s["final_eval_loss"] < s["initial_eval_loss"] - 0.05 else 1)
PY
  /usr/bin/python3 "$src/tests/app/hf_tool.py" same-values "$base/model.safetensors" \
      "$tmp/ft/model.safetensors" --names wte.weight \
      || fail "frozen embeddings changed"
  /usr/bin/python3 "$src/tests/app/hf_tool.py" same-values "$base/model.safetensors" \
      "$tmp/ft/model.safetensors" --prefix h.0.,h.1. || fail "frozen blocks changed"
  /usr/bin/python3 "$src/tests/app/hf_tool.py" same-values "$base/model.safetensors" \
      "$tmp/ft/model.safetensors" --prefix h.3. >/dev/null 2>&1 && fail "block 3 did not train"
  out=$("$wafer" runs show 1 --db "$db") || fail "runs show exit $?"
  expect_in "finetune" "$out"
  # Text output: how the steps follow from the data, and the before/after at the end.
  out=$("$wafer" finetune --base "$base" --data "$tmp/new.txt" --max-steps 4 --db "$db" \
        --set runconfig.eval_frequency=2) || fail "finetune exit $? $out"
  expect_in "steps: 4 steps as set by max_steps" "$out"
  expect_in "tokens per step: 16 sequences × 128 tokens" "$out"
  grep -Eq "^fine-tune result: eval loss on the held-out end of your text [0-9.]+ → [0-9.]+ \([0-9]+% (lower|higher)" <<<"$out" \
      || fail "no before/after line in: $out"
  expect_in "compare: wafer sample " "$out"
  expect_in "--prompt '" "$out" ;;
finetune_binary)
  # An executable given as text is refused, naming the file and what it is; --allow-binary insists.
  cp /bin/true "$tmp/notes.txt"
  out=$("$wafer" finetune --base "$src/resources/base-model" --data "$tmp/notes.txt" --dry-run \
        --db "$db" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "expected exit 1 for an ELF file, got $code: $out"
  expect_in "notes.txt' looks like an ELF executable or library, not plain text" "$out"
  expect_in "pass --allow-binary to train on it anyway" "$out"
  out=$("$wafer" finetune --base "$src/resources/base-model" --data "$tmp/notes.txt" --dry-run \
        --allow-binary --db "$db" 2>&1) || fail "--allow-binary: exit $? $out"
  expect_in "allow_binary: true" "$out"
  # wafer train refuses it too, naming the config key that insists.
  out=$("$wafer" train "$src/presets/gpt-nano.yaml" --max-steps 1 --db "$db" "${tiny_args[@]}" \
        --set "train_input.data_dir=$tmp/notes.txt" 2>&1) && fail "train on an ELF file must fail"
  expect_in "looks like an ELF executable" "$out"
  expect_in "train_input.allow_binary: true" "$out" ;;
train_chat)
  # Chat records (the bundled instruction set): `wafer train` reads them as conversations, renders
  # them with ChatML and trains on the answers, saying so; a vocabulary without room for ChatML's
  # special tokens is refused naming the key; `wafer finetune` refuses them rather than training on
  # their JSON as text.
  data="$src/resources/instructions/train.jsonl"
  out=$("$wafer" train "$src/presets/gpt-nano.yaml" --max-steps 3 --db "$db" "${tiny_args[@]}" \
        --set "train_input.data_dir=$data" --set model.vocab_size=258 --set runconfig.eval_frequency=3 \
        --set train_input.max_sequence_length=128 \
        --set runconfig.eval_steps=1 2>&1) || fail "train on chat records: exit $? $out"
  expect_in "data: OpenAI messages" "$out"
  expect_in "2700 records for training, 300 held out; chat template chatml" "$out"
  expect_in "trained on the assistant's answers only" "$out"
  expect_in "finished after 3 steps" "$out"
  expect_in "eval loss [0-9.]* (answer tokens)" "$out"
  out=$("$wafer" train "$src/presets/gpt-nano.yaml" --max-steps 1 --db "$db" "${tiny_args[@]}" \
        --set "train_input.data_dir=$data" 2>&1) && fail "a vocabulary without ChatML's tokens must fail"
  expect_in "the chat template chatml needs 2 special token(s) (<|im_start|>, <|im_end|>) after the tokenizer's 256" "$out"
  expect_in "set model.vocab_size to at least 258" "$out"
  printf '{"messages": [{"role": "user", "content": "hi"}]}\n' >"$tmp/ask.jsonl"
  out=$("$wafer" train "$src/presets/gpt-nano.yaml" --max-steps 1 --db "$db" "${tiny_args[@]}" \
        --set "train_input.data_dir=$tmp/ask.jsonl" --set model.vocab_size=258 2>&1) \
    && fail "a conversation without an answer must fail"
  expect_in "ask.jsonl:1" "$out"
  # validate reads the records as the run does.
  out=$("$wafer" validate "$src/presets/gpt-nano.yaml" --set "train_input.data_dir=$tmp/ask.jsonl" \
        --set model.vocab_size=258 2>&1) && fail "validate must refuse a conversation without an answer"
  expect_in "ask.jsonl:1" "$out"
  "$wafer" validate "$src/presets/gpt-nano.yaml" --set "train_input.data_dir=$data" \
        --set model.vocab_size=258 >/dev/null 2>&1 || fail "validate refused good records"
  # `wafer finetune` reads them as records (finetune_records), never as text.
  out=$("$wafer" finetune --base "$src/resources/base-model" --data "$data" --dry-run --db "$db" 2>&1) \
    || fail "finetune --dry-run on records: exit $? $out"
  expect_in "data: OpenAI messages" "$out"
  expect_in 'format: "messages"' "$out" ;;
finetune_records)
  # `wafer finetune` on chat records: the plan says what it read, grows the shipped base's
  # vocabulary for ChatML's two tokens, trains LoRA adapters and those rows; the run's config says
  # vocab_size 2050 and its tokenizer knows the tokens (tokenize --chat, sample). Records mixed
  # with text are refused.
  head -n 120 "$src/resources/instructions/train.jsonl" >"$tmp/chat.jsonl"
  out=$("$wafer" finetune --base "$src/resources/base-model" --data "$tmp/chat.jsonl" --lora 8 \
        --set runconfig.max_steps=3 --set train_input.batch_size=4 --set runconfig.eval_steps=1 \
        --set "runconfig.model_dir=$tmp/ft" --threads 2 --db "$db" 2>&1) || fail "finetune on records: exit $? $out"
  expect_in "data: OpenAI messages: 120 records with a \`messages\` list; 108 records to train on, 12 held out; chat template chatml" "$out"
  expect_in "108 records to train on, 12 held out; chat template chatml" "$out"
  expect_in "training rows ÷ 4 rows per step" "$out"
  expect_in "vocabulary: 2048 → 2050 for chatml's <|im_start|>, <|im_end|>" "$out"
  expect_in "vocabulary 2048 → 2050 for chatml's <|im_start|>, <|im_end|> (mean-initialised" "$out"
  expect_in "finished after 3 steps" "$out"
  grep -q "^    vocab_size: 2050" "$tmp/ft/config.yaml" || fail "the run's config must say vocab_size 2050: $(grep vocab_size "$tmp/ft/config.yaml")"
  grep -q "trainable_tokens_from: 2048" "$tmp/ft/config.yaml" || fail "the run's config must name the trainable rows"
  printf '{"messages": [{"role": "user", "content": "What is the last word of this verse?\\nIn the beginning."}]}\n' >"$tmp/ask.json"
  out=$("$wafer" tokenize --tokenizer "$tmp/ft" --chat "$tmp/ask.json" --add-generation-prompt --json 2>&1) \
    || fail "tokenize --chat on the run: exit $? $out"
  python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["ids"][0] == 2048 and 2049 in d["ids"], d["ids"]' "$out" \
    || fail "the run's tokenizer must give <|im_start|> id 2048 and <|im_end|> 2049: $out"
  prompt=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["text"], end="")' "$out")
  out=$("$wafer" sample "$tmp/ft" --prompt "$prompt" -t 0 -n 4 --threads 2 2>&1) || fail "sample the run: exit $? $out"
  expect_in "<|im_start|>assistant" "$out"
  # The merged export holds the grown table and the added tokens; a PEFT folder cannot, so it is
  # refused with the route that works.
  out=$("$wafer" export "$tmp/ft" --format peft --out "$tmp/peft" 2>&1) && fail "a PEFT export must be refused: $out"
  expect_in "wafer export $tmp/ft --merge --out DIR" "$out"
  "$wafer" export "$tmp/ft" --merge --out "$tmp/hf" >/dev/null 2>&1 || fail "merged export: exit $?"
  grep -q '"vocab_size": 2050' "$tmp/hf/config.json" || fail "the export's config must say vocab_size 2050"
  grep -q '"<|im_end|>": 2049' "$tmp/hf/added_tokens.json" || fail "the export must keep the added tokens"
  echo "a wafer streams weights" >"$tmp/new.txt"
  out=$("$wafer" finetune --base "$src/resources/base-model" --data "$tmp/chat.jsonl" "$tmp/new.txt" \
        --dry-run --db "$db" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "records mixed with text: expected exit 1, got $code: $out"
  expect_in "chat.jsonl holds instruction or chat records" "$out"
  expect_in "new.txt is plain text; fine-tune on one kind at a time" "$out" ;;
eval_answers)
  # Issue 34: `wafer eval MODEL --data RECORDS` answers each held-out record's last question
  # greedily and compares: exact match, the answer loss, best and worst by it; a model whose
  # vocabulary lacks the template's tokens, and records without answers, are refused clearly.
  data="$src/resources/instructions/held-out.jsonl"
  out=$("$wafer" eval "$src/resources/base-model" --data "$data" --answers 3 --chat-template plain \
        --max-new-tokens 4 --json) || fail "eval answers: exit $? $out"
  python3 - "$out" <<'PY' || fail "eval answers json: $out"
import json, math, sys
r = json.loads(sys.argv[1])
assert r["event"] == "eval_answers" and r["cases"] == 3 and r["chat_template"] == "plain", r
assert len(r["outcomes"]) == 3 and r["exact"] == sum(o["exact"] for o in r["outcomes"]), r
for o in r["outcomes"]:
    assert o["answer_tokens"] > 0 and o["answer_loss"] > 0, o
    assert o["exact"] == (o["reply"] == o["reference"]), o
tokens = sum(o["answer_tokens"] for o in r["outcomes"])
mean = sum(o["answer_loss"] * o["answer_tokens"] for o in r["outcomes"]) / tokens
assert math.isclose(mean, r["answer_loss"], rel_tol=1e-9), (mean, r["answer_loss"])
PY
  first=$(head -1 "$data" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["messages"][-1]["content"])')
  expect_in "\"reference\":\"$first\"" "$out"
  out=$("$wafer" eval "$src/resources/base-model" --data "$data" --answers 4 --chat-template plain \
        --max-new-tokens 4 --show 2) || fail "eval answers text: exit $? $out"
  expect_in "answering 4 of 200 conversations greedily" "$out"
  expect_in "exact match [0-9]/4 ([0-9.]*%) *answer loss [0-9.]* nats/token" "$out"
  expect_in "best by answer loss:" "$out"
  expect_in "worst by answer loss:" "$out"
  out=$("$wafer" eval "$src/resources/base-model" --data "$data" --answers 1 2>&1) \
    && fail "chatml on a model without its tokens must fail"
  expect_in "<|im_start|>, <|im_end|>" "$out"
  printf '{"text": "plain words"}\n' >"$tmp/texts.jsonl"
  out=$("$wafer" eval "$src/resources/base-model" --data "$tmp/texts.jsonl" 2>&1) \
    && fail "records without answers must fail"
  expect_in "no record is a conversation ending with an assistant's answer" "$out" ;;
chat)
  # `wafer chat`: --messages --json answers once with a reply, why it stopped and the conversation
  # including the reply (the shipped base with the plain template: it has no chat tokens); the
  # interactive mode driven through stdin with its commands, saving `messages` JSON Lines; a run
  # fine-tuned on chat records chats with the template it trained with (ChatML, its two tokens).
  cat >"$tmp/ask.json" <<'JSON'
{"messages": [{"role": "system", "content": "Answer briefly."},
              {"role": "user", "content": "Who made the heaven and the earth?"}]}
JSON
  out=$("$wafer" chat base --messages "$tmp/ask.json" --json --chat-template plain -n 12 --seed 1 \
        --save "$tmp/once.jsonl") || fail "chat --messages --json: exit $? $out"
  python3 - "$out" "$tmp/once.jsonl" <<'PY' || fail "chat --json output: $out"
import json, sys
r = json.loads(sys.argv[1])
assert isinstance(r["reply"], str) and r["reply"], r
assert r["stop_reason"] in ("max_tokens", "stop_string", "stop_token"), r
assert 1 <= r["tokens"] <= 12 and r["prompt_tokens"] > 0, r
assert r["template"] == "plain" and r["template_why"] == "chosen", r
m = r["messages"]
assert [x["role"] for x in m] == ["system", "user", "assistant"], m
assert m[2]["content"] == r["reply"], m
saved = [json.loads(l) for l in open(sys.argv[2])]
assert saved == [{"messages": m}], saved
PY
  # The same seed gives the same reply.
  again=$("$wafer" chat base --messages "$tmp/ask.json" --json --chat-template plain -n 12 --seed 1)
  reply() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])["reply"])' "$1"; }
  [[ "$(reply "$again")" == "$(reply "$out")" ]] || fail "the same seed gave another reply: $again"
  # Interactive: two turns, /system, /save, an unknown command, /reset, then /quit before a
  # last message that is never answered.
  out=$(printf 'Who made the heaven?\n/system Speak plainly.\nAnd the sea?\n/save %s\n/bogus\n/reset\nHello\n/quit\nnever answered\n' \
          "$tmp/saved.jsonl" | "$wafer" chat base --chat-template plain -n 6 -t 0 2>"$tmp/err") \
    || fail "interactive chat: exit $? $(cat "$tmp/err")"
  [[ $(grep -c '^assistant> ' <<<"$out") -eq 3 ]] || fail "expected 3 replies: $out"
  expect_in "template plain (chosen)" "$(cat "$tmp/err")"
  expect_in "(saved 5 messages to $tmp/saved.jsonl)" "$(cat "$tmp/err")"
  expect_in "unknown command /bogus; the commands are /reset, /system TEXT, /save FILE, /quit" "$(cat "$tmp/err")"
  expect_in "(new conversation)" "$(cat "$tmp/err")"
  python3 - "$tmp/saved.jsonl" <<'PY' || fail "saved conversation: $(cat "$tmp/saved.jsonl")"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, lines
m = json.loads(lines[0])["messages"]
assert [x["role"] for x in m] == ["system", "user", "assistant", "user", "assistant"], m
assert m[0]["content"] == "Speak plainly." and m[3]["content"] == "And the sea?", m
assert all(x["content"] for x in m), m
PY
  # End of input ends a chat too.
  printf 'Hi\n' | "$wafer" chat base --chat-template plain -n 3 >/dev/null 2>&1 || fail "EOF: exit $?"
  # A run fine-tuned on chat records (ChatML, vocabulary 258 for its two tokens) chats with ChatML.
  "$wafer" train "$src/presets/gpt-nano.yaml" --max-steps 2 --db "$db" "${tiny_args[@]}" \
      --set "train_input.data_dir=$src/resources/instructions/train.jsonl" \
      --set model.vocab_size=258 --set train_input.chat_template=chatml \
      --set train_input.max_sequence_length=128 >/dev/null 2>&1 || fail "chat run: exit $?"
  out=$("$wafer" chat 1 --db "$db" --messages "$tmp/ask.json" --json -n 8) \
    || fail "chat with the chat run: exit $? $out"
  python3 - "$out" <<'PY' || fail "chat run --json: $out"
import json, sys
r = json.loads(sys.argv[1])
assert r["template"] == "chatml", r
assert r["template_why"] == "the run's train_input.chat_template", r
assert r["stop_reason"] in ("max_tokens", "stop_token", "stop_string"), r
assert r["messages"][-1]["role"] == "assistant", r
PY
  ;;
chat_errors)
  # Every error a user can hit names the problem and the fix.
  printf '{"messages": [{"role": "user", "content": "hi"}\n' >"$tmp/broken.json"
  out=$("$wafer" chat base --messages "$tmp/broken.json" --chat-template plain 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "malformed file: expected exit 1, got $code: $out"
  expect_in "$tmp/broken.json:1: not valid JSON" "$out"
  printf '{"messages": [{"content": "hi"}]}' >"$tmp/norole.json"
  out=$("$wafer" chat base --messages "$tmp/norole.json" --chat-template plain 2>&1) && fail "no role must fail"
  expect_in "$tmp/norole.json: message 1 has no \"role\"" "$out"
  printf '[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yes"}]' >"$tmp/answered.json"
  out=$("$wafer" chat base --messages "$tmp/answered.json" --chat-template plain 2>&1) && fail "an answered conversation must fail"
  expect_in "must end with the user's message to be answered; it ends with a assistant message" "$out"
  out=$("$wafer" chat base --messages "$tmp/nothing.json" --chat-template plain 2>&1) && fail "a missing file must fail"
  expect_in "nothing.json" "$out"
  out=$("$wafer" chat base --chat-template llama9 </dev/null 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "unknown template: expected exit 1, got $code: $out"
  expect_in 'no chat template "llama9": give one of chatml, plain, a .jinja file' "$out"
  # The shipped base has no ChatML tokens: refused naming the template, the tokens and the fixes.
  out=$("$wafer" chat base </dev/null 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "base with ChatML: expected exit 1, got $code: $out"
  expect_in "the chat template chatml (built-in: the model has no chat template of its own) needs the special token(s) <|im_start|>, <|im_end|>" "$out"
  expect_in "vocabulary (2048 tokens" "$out"
  expect_in "fine-tune the model on chat data with chatml first" "$out"
  expect_in "(here: --chat-template plain)" "$out"
  out=$("$wafer" chat base --json </dev/null 2>&1) && fail "--json without --messages must fail"
  expect_in "--json answers a conversation given with --messages FILE" "$out"
  out=$("$wafer" chat "$tmp/no-model" --messages "$tmp/answered.json" 2>&1) && fail "a missing model must fail"
  expect_in "no-model" "$out" ;;
finetune_instructions_exact_match)
  # Issue 34's figure: a LoRA fine-tune of the shipped base on the shipped instruction set (the
  # last word of a verse, resources/instructions) with the default plan (ChatML, the answers
  # only) lifts held-out exact match from near zero to a majority (README: 30/50 after 300 steps,
  # see resources/instructions/README.md for the longer runs). The base is asked with the plain
  # template (it has no ChatML tokens); the fine-tune with the template it trained with. 350 steps
  # (measured here: 25/40, as 400 steps; 0/40 before) keep a margin of 5 over the majority at 70%
  # of the time 500 took, the suite's longest test.
  base="$src/resources/base-model"
  held="$src/resources/instructions/held-out.jsonl"
  steps=${WAFER_EXACT_MATCH_STEPS:-350}
  cases=40
  before=$("$wafer" eval "$base" --data "$held" --answers $cases --chat-template plain \
           --max-new-tokens 8 --json) || fail "eval of the base: exit $? $before"
  start=$(date +%s)
  out=$("$wafer" finetune --base "$base" --data "$src/resources/instructions/train.jsonl" \
        --lora 8 --max-steps "$steps" --json --db "$db" --set "runconfig.model_dir=$tmp/ft") \
      || fail "finetune exit $? $(tail -5 <<<"$out")"
  trained=$(( $(date +%s) - start ))
  after=$("$wafer" eval "$tmp/ft" --data "$held" --answers $cases --max-new-tokens 8 --json) \
      || fail "eval of the fine-tune: exit $? $after"
  python3 - "$before" "$after" "$steps" "$trained" <<'PY' || fail "exact match: $before / $after"
import json, sys
b, a = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print("exact match %d/%d -> %d/%d after %s LoRA steps (%s s); answer loss %.3f -> %.3f"
      % (b["exact"], b["cases"], a["exact"], a["cases"], sys.argv[3], sys.argv[4],
         b["answer_loss"], a["answer_loss"]))
assert a["chat_template"] == "chatml", a["chat_template"]
assert b["exact_fraction"] <= 0.1, "the base should be near zero"
assert a["exact_fraction"] > 0.5, "the fine-tune should answer most of them"
PY
  ;;
lesson_run_on)
  # Issue 31: a lesson whose `preset:` line ran on into the next, indented line (one path
  # component past 255 bytes) made `wafer lesson check` and `list` abort (exit 134). Both answer
  # with the lesson's error, naming the key; `list` lists the good lessons beside it.
  mkdir -p "$tmp/share/resources/lessons"
  ln -s "$src/presets" "$tmp/share/presets"
  ln -s "$src/resources/lessons/figures" "$tmp/share/resources/lessons/figures"
  cp "$src/resources/lessons/01-weight-streaming.yaml" "$tmp/share/resources/lessons/"
  lesson="$tmp/share/resources/lessons/02-hand-edited.yaml"
  { echo 'title: "A hand edit"'
    echo 'preset: ../../presets/teaching-stream.yaml'
    echo "  and the next line ran on$(printf ' and on%.0s' {1..40})"
    echo 'steps:'
    echo '  - text: hello'; } >"$lesson"
  out=$("$wafer" lesson check "$lesson" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "check: expected exit 1, got $code: $out"
  expect_in "02-hand-edited.yaml:2:9: preset: the preset does not load: " "$out"
  expect_in "cannot be read (File name too long)" "$out"
  expect_in "did the \`preset:\` line run on into the next" "$out"
  out=$("$wafer" lesson list "$tmp/share/resources/lessons" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "list: expected exit 1 (one lesson does not load), got $code: $out"
  expect_in "01-weight-streaming.yaml *One step of weight streaming" "$out"
  expect_in "02-hand-edited.yaml *(does not load" "$out"
  expect_in "File name too long" "$out" ;;
lessons)
  # Issue 17: `wafer lesson list` names the bundled lessons, `check` validates without running and
  # reports a bad file at its line and column, `run` exits 1 when a step's check fails.
  out=$("$wafer" lesson list) || fail "list: exit $? $out"
  expect_in "01-weight-streaming.yaml" "$out"
  expect_in "One step of weight streaming" "$out"
  out=$("$wafer" lesson check "$src"/resources/lessons/*.yaml) || fail "check: exit $? $out"
  expect_in "02-wafer-buffer.yaml: ok" "$out"
  cat >"$tmp/bad.yaml" <<EOF2
title: Bad
preset: $src/presets/teaching-stream.yaml
steps:
  - text: hello
    acton: {run_steps: 2}
    view: wafer/timelime
EOF2
  out=$("$wafer" lesson check "$tmp/bad.yaml" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "expected exit 1 for a bad lesson, got $code: $out"
  expect_in "bad.yaml:5:5: steps\[0\].acton: unknown key; did you mean \`action\`?" "$out"
  expect_in "bad.yaml:6:11: steps\[0\].view: unknown view \"timelime\" in the wafer tab; did you mean \`timeline\`?" "$out"
  out=$("$wafer" lesson run "$tmp/bad.yaml" 2>&1) && fail "run of a bad lesson must fail"
  cat >"$tmp/fails.yaml" <<EOF2
title: A check that fails
preset: $src/presets/teaching-stream.yaml
steps:
  - text: Two steps.
    action: {run_steps: 2}
    expect: [run.steps == 2, loss.final < 0]
EOF2
  out=$("$wafer" lesson run "$tmp/fails.yaml" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "expected exit 1 for a failing check, got $code: $out"
  expect_in "ok   expect run.steps == 2" "$out"
  expect_in "FAIL expect loss.final < 0  (loss.final is " "$out"
  expect_in "1 of 1 steps failed" "$out"
  # Lessons 5 and 6's study actions are checked as strictly (widths the coord check can train).
  cat >"$tmp/bad-study.yaml" <<EOF2
title: Bad study
preset: $src/presets/teaching-mup.yaml
steps:
  - text: a coord check
    action: {coord_check: {widths: [16, 24], step: 3}}
EOF2
  out=$("$wafer" lesson check "$tmp/bad-study.yaml" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "expected exit 1 for a bad study action, got $code: $out"
  expect_in "bad-study.yaml:5:46: steps\[0\].action.coord_check.step: unknown key; did you mean \`steps\`?" "$out" ;;
predict_sparsity_blocks)
  # The top-level sparsity section's patterns choose blocks: h.1-h.3 pruned computes less than
  # h.0 alone, which computes less than dense (predict once read every block from h.0).
  compute() {
    "$wafer" predict "$src/presets/gpt-nano.yaml" --json "$@" |
      python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["time_split"]["compute_s"])'
  }
  dense=$(compute) || fail "dense predict"
  later=$(compute --set 'sparsity={sparsity: 0.9, type: static, param_name_patterns: ["h\\.[1-3]\\..*"]}') ||
    fail "h.1-h.3 predict"
  first=$(compute --set 'sparsity={sparsity: 0.9, type: static, param_name_patterns: ["h\\.0\\..*"]}') ||
    fail "h.0 predict"
  python3 -c "import sys; d, l, f = map(float, sys.argv[1:]); sys.exit(0 if l < f < d else 1)" \
    "$dense" "$later" "$first" || fail "compute s: dense $dense, h.1-h.3 $later, h.0 $first" ;;
*)
  fail "unknown case" ;;
esac
echo "PASS [$case_name]"
