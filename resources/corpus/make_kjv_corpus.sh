#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Regenerates the bundled King James Bible corpus (one plain-text file per book) from Debian's
# bible-kjv package. One-time maintenance tool: the studio itself never needs the package.
#   sudo apt-get install -y bible-kjv && resources/corpus/make_kjv_corpus.sh
# Output: resources/corpus/kjv-NN-<book>.txt, each a title line, then per chapter a "Chapter N"
# heading and one verse per line with the "Book1:1 " references removed, blank lines between.
set -euo pipefail
command -v bible >/dev/null || { echo "needs the 'bible' command: apt-get install -y bible-kjv" >&2; exit 1; }
out="$(cd "$(dirname "$0")" && pwd)"

# "display name|bible reference prefix" in canonical order; 999:999 is coerced to the book's end.
books=(
  "Genesis|Genesis" "Exodus|Exodus" "Ruth|Ruth" "1 Samuel|1Samuel" "2 Samuel|2Samuel"
  "1 Kings|1Kings" "Job|Job" "Psalms|Psalms" "Proverbs|Proverbs" "Ecclesiastes|Ecclesiastes"
  "Song of Solomon|Song" "Isaiah|Isaiah" "Matthew|Matthew" "Mark|Mark" "Luke|Luke" "John|John"
  "Acts|Acts" "Romans|Romans" "Revelation|Revelation"
)
rm -f "$out"/kjv-*.txt
n=0
for entry in "${books[@]}"; do
  n=$((n + 1))
  name="${entry%%|*}"
  ref="${entry##*|}"
  slug="$(echo "$name" | tr 'A-Z ' 'a-z-')"
  file="$(printf '%s/kjv-%02d-%s.txt' "$out" "$n" "$slug")"
  # -f prints one verse per line as "<Book><chapter>:<verse> <text>"; COLUMNS keeps lines whole.
  COLUMNS=100000 bible -f "$ref 1:1-999:999" | LC_ALL=C awk -v title="$name" '
    BEGIN { print title; chapter = 0 }
    /^[^ ]*[0-9]+:[0-9]+ / {
      ref = $1; text = substr($0, length(ref) + 2)
      sub(/:[0-9]+$/, "", ref); sub(/^.*[^0-9]/, "", ref)
      if (ref + 0 != chapter) { chapter = ref + 0; printf "\nChapter %d\n\n", chapter }
      print text
    }' > "$file"
done
ls -l "$out"/kjv-*.txt
du -cb "$out"/kjv-*.txt | tail -1
