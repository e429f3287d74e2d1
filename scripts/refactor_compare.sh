#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Behaviour-preservation check for refactors: trains, fine-tunes, resumes, sweeps and exports the
# same set of configs with two `wafer` binaries and compares every written tensor file byte for
# byte, the per-step losses (--json lines without their timing fields), `wafer predict --json`
# for a set of presets, and the emulator's validation table.
#
#   scripts/refactor_compare.sh OLD_WAFER NEW_WAFER [WORK_DIR]
#
# e.g. OLD_WAFER from an older commit's install (cmake --install build --prefix /tmp/old) and
# NEW_WAFER=build-test/app/wafer. Exit status 0 when everything matches; each difference is named.
set -uo pipefail

OLD=${1:?usage: refactor_compare.sh OLD_WAFER NEW_WAFER [WORK_DIR]}
NEW=${2:?usage: refactor_compare.sh OLD_WAFER NEW_WAFER [WORK_DIR]}
WORK=${3:-$(mktemp -d /tmp/refactor-compare.XXXXXX)}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PRESETS=$ROOT/presets
CORPUS=$ROOT/resources/corpus
mkdir -p "$WORK"
failures=0
checks=0

fail() {
    echo "DIFFERS: $*"
    failures=$((failures + 1))
}

# Run one wafer command with the side's binary in isolated user folders. Both sides run in the
# same absolute folder ($WORK/cur, moved to $WORK/old or $WORK/new afterwards), so paths that
# end up in configs, hashes and tensor file headers are equal.
# wafer_run NAME ARGS... (stdout to $WORK/cur/NAME.out, stderr to .err)
wafer_run() {
    local name=$1
    shift
    local dir=$WORK/cur
    mkdir -p "$dir/xdg/data" "$dir/xdg/cache" "$dir/xdg/config"
    (cd "$dir" && XDG_DATA_HOME=$dir/xdg/data XDG_CACHE_HOME=$dir/xdg/cache \
        XDG_CONFIG_HOME=$dir/xdg/config OMP_NUM_THREADS=1 \
        "${WAFER_LAUNCH[@]}" "$BIN" "$@" >"$dir/$name.out" 2>"$dir/$name.err")
    local rc=$?
    echo "$rc" >"$dir/$name.rc"
}

both() {
    WAFER_LAUNCH=()
    wafer_run "$@"
}

# Every file under a model folder compared byte for byte (the lock file and the JSON trainer
# state's timing fields aside).
compare_folder() {
    local rel=$1
    local a=$WORK/old/$rel b=$WORK/new/$rel
    if [[ ! -d $a || ! -d $b ]]; then
        fail "$rel: folder missing (old: $([[ -d $a ]] && echo yes || echo no), new: $([[ -d $b ]] && echo yes || echo no))"
        return
    fi
    local fa fb
    fa=$(cd "$a" && find . -type f ! -name .wafer.lock | sort)
    fb=$(cd "$b" && find . -type f ! -name .wafer.lock | sort)
    if [[ $fa != "$fb" ]]; then
        fail "$rel: different file lists"
        diff <(echo "$fa") <(echo "$fb") | head -20
    fi
    local f
    while read -r f; do
        [[ -z $f || ! -f $b/$f ]] && continue
        checks=$((checks + 1))
        case $f in
        *.json | *.yaml)
            # Text files: compare without paths of the work folders and wall-clock fields.
            if ! diff -q <(normalize "$a/$f") <(normalize "$b/$f") >/dev/null; then
                fail "$rel/$f"
                diff <(normalize "$a/$f") <(normalize "$b/$f") | head -10
            fi
            ;;
        *)
            cmp -s "$a/$f" "$b/$f" || fail "$rel/$f (binary, $(cmp "$a/$f" "$b/$f" 2>&1 | head -1))"
            ;;
        esac
    done <<<"$fa"
}

# A text output without what depends on the wall clock: timing and speed fields, the measured
# share of stream-in time hidden behind compute, and the run ids a parallel sweep hands out in
# finishing order (its trial lines are sorted by trial number).
normalize() {
    /usr/bin/python3 "$ROOT/scripts/refactor_normalize.py" "$1"
}

# The --json lines of a training command, with timing and speed fields removed.
compare_json_lines() {
    local name=$1
    checks=$((checks + 1))
    local ra rb
    ra=$(cat "$WORK/old/$name.rc") rb=$(cat "$WORK/new/$name.rc")
    if [[ $ra != "$rb" ]]; then
        fail "$name: exit status old $ra, new $rb"
        tail -n 3 "$WORK/new/$name.err"
        return
    fi
    if ! diff -q <(normalize "$WORK/old/$name.out") <(normalize "$WORK/new/$name.out") >/dev/null; then
        fail "$name: output"
        diff <(normalize "$WORK/old/$name.out") <(normalize "$WORK/new/$name.out") | head -10
    fi
}

nano=$PRESETS/gpt-nano.yaml
small=(--set train_input.batch_size=6 --set eval_input.batch_size=6 --set runconfig.eval_steps=2)
emulated=(gpt-nano gpt-nano-moe gpt-nano-vsl teaching-sparsity teaching-stream cerebras-gpt-111m
    cerebras-gpt-1.3b cerebras-gpt-13b llama-70b-class spdf-pretrain mup-base)

# Every command of the comparison, run with $BIN in $WORK/cur.
suite() {
    WAFER_LAUNCH=()
    wafer_run nano-fp32 train "$nano" --json --threads 2 --max-steps 8 "${small[@]}" \
        --set runconfig.checkpoint_steps=4 --set runconfig.model_dir=nano-fp32 --db runs.sqlite
    wafer_run nano-resume train --resume nano-fp32/checkpoint-4 --json --threads 2 \
        --db runs.sqlite --set runconfig.model_dir=nano-resume
    wafer_run nano-bf16 train "$nano" --json --threads 2 --max-steps 6 "${small[@]}" \
        --set model.mixed_precision=true --set runconfig.model_dir=nano-bf16 --db runs.sqlite
    wafer_run nano-3csx train "$nano" --json --threads 2 --max-steps 6 "${small[@]}" \
        --set runconfig.num_csx=3 --set runconfig.model_dir=nano-3csx --db runs.sqlite
    wafer_run nano-dropout train "$nano" --json --threads 1 --max-steps 5 "${small[@]}" \
        --set model.dropout_rate=0.1 --set model.attention_dropout_rate=0.1 \
        --set runconfig.model_dir=nano-dropout --db runs.sqlite
    wafer_run moe train "$PRESETS/gpt-nano-moe.yaml" --json --threads 2 --max-steps 5 "${small[@]}" \
        --set runconfig.model_dir=moe --db runs.sqlite
    wafer_run vsl train "$PRESETS/gpt-nano-vsl.yaml" --json --threads 2 --max-steps 6 \
        --set train_input.short_sequence_steps=3 --set runconfig.model_dir=vsl --db runs.sqlite
    wafer_run sparsity train "$PRESETS/teaching-sparsity.yaml" --json --threads 2 --max-steps 5 \
        --set runconfig.model_dir=sparsity --db runs.sqlite
    wafer_run mup train "$PRESETS/mup-base.yaml" --json --threads 2 --max-steps 4 \
        --set runconfig.model_dir=mup --db runs.sqlite

    wafer_run ft-full finetune --base nano-fp32 --data "$CORPUS" --max-steps 4 --json --threads 2 \
        --set runconfig.model_dir=ft-full --db runs.sqlite
    wafer_run ft-lora finetune --base nano-fp32 --data "$CORPUS" --lora 4 --max-steps 4 --json \
        --threads 2 --set runconfig.model_dir=ft-lora --db runs.sqlite
    wafer_run export-hf export nano-fp32 --out export-hf --db runs.sqlite
    wafer_run export-peft export ft-lora --format peft --out export-peft --db runs.sqlite

    if command -v mpirun >/dev/null; then
        WAFER_LAUNCH=(mpirun -np 2 --oversubscribe --allow-run-as-root --mca btl self,vader)
        wafer_run mpi train "$nano" --json --threads 1 --max-steps 5 "${small[@]}" \
            --set runconfig.num_csx=2 --set memoryx.shards=2 --set runconfig.model_dir=mpi \
            --db runs.sqlite
        WAFER_LAUNCH=()
    fi

    # mup-sweep at 2 widths x 2 rates x 2 parametrizations, 4 steps each.
    sed -e "s#data_dir: ../resources/corpus#data_dir: $CORPUS#" \
        -e 's/values: \[16, 32, 64, 128\]/values: [16, 32]/' -e 's/\[1, 2, 4, 8\]/[1, 2]/' \
        -e 's/\[64, 128, 256, 512\]/[64, 128]/' -e 's/min: -10, max: -3/min: -5, max: -4/' \
        -e 's/^    seeds: 3/    seeds: 1/' -e 's/^    max_steps: 250/    max_steps: 4/' \
        -e 's/final_loss_steps: 10/final_loss_steps: 2/' "$PRESETS/mup-sweep.yaml" \
        >"$WORK/cur/sweep.yaml"
    wafer_run sweep sweep "$WORK/cur/sweep.yaml" --yes --json --db sweep.sqlite

    local p
    for p in "${emulated[@]}"; do
        wafer_run "predict-$p" predict "$PRESETS/$p.yaml" --json
        wafer_run "validate-$p" validate "$PRESETS/$p.yaml"
    done
    wafer_run predict-4csx predict "$PRESETS/cerebras-gpt-1.3b.yaml" --json \
        --set runconfig.num_csx=4
    wafer_run validate-emulator validate-emulator
}

for side in old new; do
    echo "== running the $side binary"
    BIN=$OLD
    [[ $side == new ]] && BIN=$NEW
    rm -rf "$WORK/cur" "${WORK:?}/$side"
    mkdir -p "$WORK/cur"
    suite
    mv "$WORK/cur" "$WORK/$side"
done

echo "== comparing"
for run in nano-fp32 nano-resume nano-bf16 nano-3csx nano-dropout moe vsl sparsity mup ft-full \
    ft-lora; do
    compare_json_lines "$run"
    compare_folder "$run"
done
compare_folder export-hf
compare_folder export-peft
if [[ -f $WORK/old/mpi.out ]]; then
    compare_json_lines mpi
    compare_folder mpi
fi
compare_json_lines sweep
for p in "${emulated[@]}"; do
    compare_json_lines "predict-$p"
    compare_json_lines "validate-$p"
done
compare_json_lines predict-4csx
compare_json_lines validate-emulator

echo "== $checks checks, $failures differences (work folder $WORK)"
[[ $failures -eq 0 ]]
