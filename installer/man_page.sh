#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Writes a program's man page (gzipped) from its --help with help2man, at build time
# (installer/CMakeLists.txt). With --commands (for `wafer`), the --help of every subcommand the
# help lists, and of theirs in turn, becomes a section of COMMANDS, so the page holds every option.
# Usage: man_page.sh PROGRAM VERSION SUMMARY OUT.1.gz [--commands]
set -euo pipefail
program=$1 version=$2 summary=$3 out=$4
commands=${5:-}
dir=$(cd "$(dirname "$program")" && pwd)
name=$(basename "$program")
include=$(mktemp)
page=$(mktemp)
trap 'rm -f "$include" "$page"' EXIT

# roff: a backslash prints as \e; a line starting with . or ' is text, not a request.
roff_text() { sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"; }

# The names in the "Subcommands:" block of a CLI11 --help text.
subcommands_in() { awk '/^Subcommands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } /^$/ { on = 0 }'; }
help_of() { PATH="$dir:$PATH" "$name" "$@" --help; }
describe() {  # a command's section, then its subcommands'
  local help sub
  help=$(help_of "$@")
  echo ".SS \"$name $*\"" >>"$include"
  echo ".nf" >>"$include"
  roff_text <<<"$help" >>"$include"
  echo ".fi" >>"$include"
  for sub in $(subcommands_in <<<"$help"); do describe "$@" "$sub"; done
}
if [[ "$commands" == --commands ]]; then
  echo "[COMMANDS]" >>"$include"
  for command in $(help_of | subcommands_in); do describe "$command"; done
fi
cat >>"$include" <<'SECTIONS'
[ENVIRONMENT]
.TP
.B WAFER_STUDIO_HOME
The folder holding the presets, wafer specs, corpus, base model and lessons. By default the
programs find it beside themselves: \fI<prefix>/share/wafer-studio\fR for \fI<prefix>/bin/wafer\fR.
.TP
.B XDG_DATA_HOME
The run store (\fIwafer-studio/runs.sqlite\fR) and the run folders go under it
(default \fI~/.local/share\fR).
.TP
.B XDG_CACHE_HOME
Token caches and trained tokenizers go under it (default \fI~/.cache\fR).
[FILES]
.TP
.I /usr/share/wafer-studio/presets
Ready configs: tiny teaching models, the muP sweep, fine-tuning, the Cerebras-GPT shapes; wafer
specs in \fIpresets/wafers\fR.
.TP
.I ~/.local/share/wafer-studio/runs.sqlite
The run store both programs share: every run, its metrics and its checkpoints.
[SEE ALSO]
The user guide, \fI/usr/share/wafer-studio/docs/guide.md\fR and the chapters it links (in the
studio: Help, F1); dated measurements in \fI/usr/share/wafer-studio/CHANGELOG.md\fR.
SECTIONS

# help2man runs the program by its bare name, so the usage lines name it without a build path.
QT_QPA_PLATFORM=offscreen PATH="$dir:$PATH" help2man --no-info --no-discard-stderr \
  --version-string="$version" --name="$summary" --include="$include" --output="$page" "$name"
gzip -9n -c "$page" >"$out"
