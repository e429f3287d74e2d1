#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# cmake/WriteVersion.cmake, as every build runs it (issue 36: `wafer --version` never names a
# stale revision): in a scratch git repository the header names the commit, follows a new commit
# and uncommitted changes ("-modified"), is left untouched (same mtime) when nothing changed, and
# says "unknown" outside git. Usage: version_test.sh SOURCE_DIR
set -uo pipefail
src=$1
case_name=version
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$src/tests/support/test_helpers.sh"  # fail, expect_in
command -v git >/dev/null || { echo "skipped: no git"; exit 77; }
write() {  # SOURCE_DIR
  cmake -DSOURCE_DIR="$1" -DVERSION=9.8.7 -DTEMPLATE="$src/cmake/version.h.in" \
        -DOUTPUT="$tmp/version.h" -P "$src/cmake/WriteVersion.cmake" || fail "WriteVersion: exit $?"
}
repo="$tmp/repo"
mkdir -p "$repo" && cd "$repo" || fail "cd"
git init -q . && git config user.email t@example && git config user.name t
echo a >file && git add file && git commit -qm a
write "$repo"
first=$(git rev-parse --short=7 HEAD)
expect_in "#define WAFER_VERSION \"9.8.7\"" "$(cat "$tmp/version.h")"
expect_in "#define WAFER_GIT_REVISION \"$first\"" "$(cat "$tmp/version.h")"
# Nothing changed: the header keeps its time, so nothing including it recompiles.
touch -d '2000-01-01' "$tmp/version.h"
write "$repo"
[[ $(stat -c %Y "$tmp/version.h") -eq $(date -d '2000-01-01' +%s) ]] \
    || fail "the header was rewritten though nothing changed"
# A change not committed yet, then a new commit: the next build says so.
echo b >file
write "$repo"
expect_in "#define WAFER_GIT_REVISION \"$first-modified\"" "$(cat "$tmp/version.h")"
git commit -qam b
write "$repo"
second=$(git rev-parse --short=7 HEAD)
[[ $second != "$first" ]] || fail "the second commit has the first one's id"
expect_in "#define WAFER_GIT_REVISION \"$second\"" "$(cat "$tmp/version.h")"
# A source tree that is no git checkout (a release tarball).
mkdir -p "$tmp/tarball"
write "$tmp/tarball"
expect_in "#define WAFER_GIT_REVISION \"unknown\"" "$(cat "$tmp/version.h")"
echo "version.h follows the commit: $first, $first-modified, $second, unknown"
