#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The Debian packages as a user gets them (issues 20, 36): wafer-studio (the programs, amd64) and
# wafer-studio-data (presets, corpus, base model, lessons, guide; Architecture: all), built with
# CPack from this build folder, then their contents, control fields, desktop files, AppStream
# page and man pages checked; installed into a scratch root and run with the source tree out of
# reach; installed and removed with dpkg; the programs' hardening; and lintian.
# Usage: package_test.sh BUILD_DIR SOURCE_DIR PACKAGE_DIR CASE MIME_TYPE_OF
#   CASE build       cpack -G DEB into PACKAGE_DIR (the fixture the other cases use)
#        contents    dpkg-deb -c / -f: the files of each package and the control fields
#        metainfo    the AppStream metainfo: appstreamcli validate, its screenshots and release
#        installed   extracted into a scratch root, run with the sources hidden (as root: in a
#                    mount namespace where the source folder is an empty tmpfs and the
#                    installed tree is read-only)
#        dpkg        dpkg --root: the dependency on the data is enforced; install, then remove;
#                    the user's runs stay
#        hardening   hardening-check on both programs as packaged
#        relocated   cmake --install to another prefix, run from there
#        lintian     no errors or warnings on either package; the informational tags are printed
set -uo pipefail
build=$1
src=$2
pkgdir=$3
case_name=$4
mime_type_of=$5  # prints a file's MIME type as Qt sees it (mime_type_of.cpp)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

. "$(dirname "${BASH_SOURCE[0]}")/../support/test_helpers.sh"  # fail, expect_in

version=$(sed -n 's/^#define WAFER_VERSION "\(.*\)"/\1/p' "$build/generated/wafer/version.h")
[[ -n "$version" ]] || fail "no WAFER_VERSION in $build/generated/wafer/version.h"
deb="$pkgdir/wafer-studio_${version}_amd64.deb"
data_deb="$pkgdir/wafer-studio-data_${version}_all.deb"
if [[ "$case_name" != build && "$case_name" != relocated ]]; then
  [[ -f "$deb" && -f "$data_deb" ]] ||
    fail "no package $deb or $data_deb (the package.build test makes them)"
fi

# Extracts both packages into the folder $1.
extract_both() {
  dpkg-deb -x "$data_deb" "$1" || fail "dpkg-deb -x $data_deb failed"
  dpkg-deb -x "$deb" "$1" || fail "dpkg-deb -x $deb failed"
}

# Runs a command with the source folder (and the build folder inside it) out of reach and the
# installed tree read-only. Needs root for the mount namespace; without it, the command runs as
# is, and the checks on where the programs found their data still hold.
hidden() {
  if [[ $(id -u) -eq 0 ]] && unshare -m true 2>/dev/null; then
    unshare -m -- bash -c 'set -e
      mount -t tmpfs -o ro,size=1m none "$1"
      mount --bind "$2" "$2"
      mount -o remount,bind,ro "$2"
      shift 2
      "$@"' hidden "$src" "$HIDDEN_RO" "$@"
  else
    echo "(not root: running without hiding the source folder)" >&2
    "$@"
  fi
}

case "$case_name" in
build)
  mkdir -p "$pkgdir"
  rm -f "$pkgdir"/wafer-studio*.deb
  (cd "$build" && cpack -G DEB -B "$pkgdir") >"$tmp/cpack.log" 2>&1 ||
    fail "cpack failed: $(cat "$tmp/cpack.log")"
  for f in "$deb" "$data_deb"; do
    [[ -f "$f" ]] || fail "cpack made no $f: $(cat "$tmp/cpack.log")"
  done
  made=$(cd "$pkgdir" && ls -- *.deb)
  [[ $(wc -l <<<"$made") -eq 2 ]] || fail "cpack made other packages than the two: $made" ;;

contents)
  list=$(dpkg-deb -c "$deb") || fail "dpkg-deb -c $deb failed"
  data_list=$(dpkg-deb -c "$data_deb") || fail "dpkg-deb -c $data_deb failed"
  for f in ./usr/bin/wafer ./usr/bin/wafer-studio \
           ./usr/share/applications/wafer-studio.desktop \
           ./usr/share/metainfo/example.a_seed_e1140c5a.WaferStudio.metainfo.xml \
           ./usr/share/mime/packages/wafer-studio.xml \
           ./usr/share/icons/hicolor/scalable/apps/wafer-studio.svg \
           ./usr/share/icons/hicolor/16x16/apps/wafer-studio.png \
           ./usr/share/icons/hicolor/48x48/apps/wafer-studio.png \
           ./usr/share/icons/hicolor/256x256/apps/wafer-studio.png \
           ./usr/share/man/man1/wafer.1.gz ./usr/share/man/man1/wafer-studio.1.gz \
           ./usr/share/doc/wafer-studio/copyright ./usr/share/doc/wafer-studio/changelog.gz; do
    grep -q " $f\$" <<<"$list" || fail "wafer-studio lacks $f"
  done
  for f in ./usr/share/wafer-studio/README.md \
           ./usr/share/wafer-studio/CHANGELOG.md ./usr/share/wafer-studio/HACKING.md \
           ./usr/share/wafer-studio/docs/guide.md \
           ./usr/share/wafer-studio/docs/studio.md \
           ./usr/share/wafer-studio/docs/config-reference.md \
           ./usr/share/wafer-studio/presets/gpt-nano.yaml \
           ./usr/share/wafer-studio/presets/mup-sweep.yaml \
           ./usr/share/wafer-studio/presets/wafers/wse3.yaml \
           ./usr/share/wafer-studio/presets/wafers/teaching-16x16.yaml \
           ./usr/share/wafer-studio/resources/corpus/kjv-01-genesis.txt \
           ./usr/share/wafer-studio/resources/base-model/model.safetensors \
           ./usr/share/wafer-studio/resources/base-model/vocab.json \
           ./usr/share/wafer-studio/resources/lessons/01-weight-streaming.yaml \
           ./usr/share/wafer-studio/resources/lessons/figures/weight-streaming.png \
           ./usr/share/wafer-studio/resources/screenshots/studio-training.png \
           ./usr/share/doc/wafer-studio-data/copyright \
           ./usr/share/doc/wafer-studio-data/changelog.gz; do
    grep -q " $f\$" <<<"$data_list" || fail "wafer-studio-data lacks $f"
  done
  # The split: the data only in the data package, the programs' files only in theirs.
  if grep -E ' \./usr/share/wafer-studio/.' <<<"$list"; then
    fail "wafer-studio holds data that belongs in wafer-studio-data (listed above)"
  fi
  while read -r path; do
    case "$path" in
      ./ | ./usr/ | ./usr/share/ | ./usr/share/doc/ | ./usr/share/wafer-studio/* | \
      ./usr/share/doc/wafer-studio-data/*) ;;
      *) fail "wafer-studio-data holds $path, outside share/wafer-studio and its doc folder" ;;
    esac
  done < <(awk '{print $6}' <<<"$data_list")
  # Every chapter of the user guide, which the studio's Help renders from the install.
  for chapter in "$src"/docs/*.md; do
    f=./usr/share/wafer-studio/docs/$(basename "$chapter")
    grep -q " $f\$" <<<"$data_list" || fail "wafer-studio-data lacks the guide's $f"
  done
  # Nothing of the build, the tests or the source tree's scripts.
  if grep -E '\.sh$|/tests?/|CMake|\.cpp$|\.h$|_test$' <<<"$list"$'\n'"$data_list"; then
    fail "the packages hold build or test files (listed above)"
  fi
  # The data package: architecture-independent, no programs; the programs depend on it at
  # exactly their version.
  [[ $(dpkg-deb -f "$data_deb" Package) == wafer-studio-data ]] || fail "Package: is not wafer-studio-data"
  [[ $(dpkg-deb -f "$data_deb" Version) == "$version" ]] || fail "the data's Version: is not $version"
  [[ $(dpkg-deb -f "$data_deb" Architecture) == all ]] || fail "the data's Architecture: is not all"
  [[ -z $(dpkg-deb -f "$data_deb" Depends) ]] || fail "the data depends on something"
  mkdir -p "$tmp/data" && dpkg-deb -x "$data_deb" "$tmp/data" || fail "dpkg-deb -x $data_deb failed"
  elf=$(find "$tmp/data" -type f -exec sh -c 'head -c4 "$1" | grep -q "ELF" && echo "$1"' sh {} \;)
  [[ -z "$elf" ]] || fail "wafer-studio-data holds programs: $elf"
  [[ $(dpkg-deb -f "$deb" Package) == wafer-studio ]] || fail "Package: is not wafer-studio"
  [[ $(dpkg-deb -f "$deb" Version) == "$version" ]] || fail "Version: is not $version"
  [[ $(dpkg-deb -f "$deb" Architecture) == amd64 ]] || fail "Architecture: is not amd64"
  depends=$(dpkg-deb -f "$deb" Depends)
  tr ',' '\n' <<<"$depends" | sed 's/^ *//' | grep -qxF "wafer-studio-data (= $version)" ||
    fail "Depends: lacks wafer-studio-data (= $version): $depends"
  # Computed by dpkg-shlibdeps from the programs' libraries, most with a minimum version.
  names=$(tr ',' '\n' <<<"$depends" | sed 's/^ *//; s/ .*//')
  [[ $(grep -c '(>= ' <<<"$(tr ',' '\n' <<<"$depends")") -ge 10 ]] ||
    fail "Depends: has few versioned entries, so it was not computed: $depends"
  for lib in libc6 'libstdc++6' libqt6core6 libqt6widgets6 libqt6svg6 libqcustomplot2.1-qt6 \
             libsqlite3-0 libyaml-cpp0.7 libdnnl2 libhwy1 libopenmpi3 libzip4 libfmt9; do
    grep -qxF "$lib" <<<"$names" || fail "Depends: lacks $lib: $depends"
  done
  grep -q -- '-dev' <<<"$depends" && fail "Depends: names a -dev package: $depends"
  # The desktop entry and the MIME type are valid, and the MIME type is what the entry opens.
  dpkg-deb -x "$deb" "$tmp/root" || fail "dpkg-deb -x failed"
  desktop-file-validate "$tmp/root/usr/share/applications/wafer-studio.desktop" ||
    fail "desktop-file-validate rejects the .desktop file"
  grep -q '^MimeType=application/x-wafer-studio-config;application/x-yaml;' \
    "$tmp/root/usr/share/applications/wafer-studio.desktop" || fail "the entry opens no configs or YAML"
  mkdir -p "$tmp/mime/packages"
  cp /usr/share/mime/packages/freedesktop.org.xml "$tmp/root/usr/share/mime/packages/wafer-studio.xml" \
    "$tmp/mime/packages/"
  XDG_DATA_DIRS="$tmp" update-mime-database "$tmp/mime" 2>"$tmp/mime.err" || fail "update-mime-database: $(cat "$tmp/mime.err")"
  [[ ! -s "$tmp/mime.err" ]] || fail "update-mime-database complains: $(cat "$tmp/mime.err")"
  grep -q 'application/x-wafer-studio-config' "$tmp/mime/magic" ||
    fail "the config type's content match is not in the MIME database"
  grep -q '^application/x-wafer-studio-config application/x-yaml$' "$tmp/mime/subclasses" ||
    fail "the config type is not a kind of YAML"
  # As Qt (and KDE's file managers) read that database: a config without an extension is typed
  # by its content; any *.yaml is YAML (names come first), so the entry opens YAML too.
  printf 'train_input:\n    data_dir: corpus\n' >"$tmp/params_gpt3_111m.yaml"
  printf 'services: {}\n' >"$tmp/compose.yaml"
  printf 'train_input:\n    data_dir: corpus\nrunconfig:\n    max_steps: 1\n' >"$tmp/training-config"
  types=$(XDG_DATA_DIRS="$tmp" XDG_DATA_HOME="$tmp/none" "$mime_type_of" "$tmp/params_gpt3_111m.yaml" \
    "$tmp/compose.yaml" "$tmp/training-config") || fail "mime_type_of failed"
  expect_in "params_gpt3_111m.yaml application/x-yaml" "$types"
  expect_in "compose.yaml application/x-yaml" "$types"
  expect_in "training-config application/x-wafer-studio-config" "$types"
  # The man pages render, and wafer's holds every subcommand's options.
  page=$(MANWIDTH=100 man -l "$tmp/root/usr/share/man/man1/wafer.1.gz" 2>&1) || fail "man wafer: $page"
  for text in "wafer train" "--resume" "wafer runs list" "wafer store recover" "WAFER_STUDIO_HOME"; do
    expect_in "$text" "$page"
  done
  page=$(MANWIDTH=100 man -l "$tmp/root/usr/share/man/man1/wafer-studio.1.gz" 2>&1) ||
    fail "man wafer-studio: $page"
  expect_in "--screenshot" "$page" ;;

installed)
  root="$tmp/root"
  extract_both "$root"
  export HIDDEN_RO=$root HOME="$tmp/home" XDG_DATA_HOME="$tmp/home/data" \
         XDG_CACHE_HOME="$tmp/home/cache" XDG_CONFIG_HOME="$tmp/home/config"
  unset WAFER_STUDIO_HOME
  mkdir -p "$HOME"
  share="$root/usr/share/wafer-studio"
  wafer="$root/usr/bin/wafer"
  cd "$tmp" || fail "cd"
  out=$(hidden "$wafer" --version 2>&1) || fail "wafer --version: $out"
  expect_in "wafer $version" "$out"
  expect_in "presets and resources: $share (install prefix)" "$out"
  expect_in "run store: $XDG_DATA_HOME/wafer-studio/runs.sqlite" "$out"
  out=$(hidden "$wafer" validate "$share/presets/gpt-nano.yaml" 2>&1) || fail "validate: $out"
  expect_in "valid" "$out"
  # A wafer spec by name, from the installed presets/wafers.
  out=$(hidden "$wafer" validate "$share/presets/teaching-stream.yaml" 2>&1) ||
    fail "validate teaching-stream: $out"
  out=$(hidden "$wafer" fields 2>&1) || fail "fields: $out"
  expect_in "optimizer.learning_rate" "$out"
  out=$(hidden "$wafer" lesson list 2>&1) || fail "lesson list: $out"
  expect_in "01-weight-streaming.yaml" "$out"
  # A few training steps of the default preset on the bundled corpus: the token cache and the
  # run store go to the user's folders, nothing into the read-only install.
  out=$(hidden "$wafer" train "$share/presets/gpt-nano.yaml" --max-steps 3 --name installed 2>&1) ||
    fail "train: $out"
  [[ -f "$XDG_DATA_HOME/wafer-studio/runs.sqlite" ]] || fail "no run store in the user's data folder"
  out=$(hidden "$wafer" runs list 2>&1) || fail "runs list: $out"
  expect_in "installed" "$out"
  expect_in "finished" "$out"
  # The bundled base model fine-tunes.
  printf 'In the beginning was the word, and the word was with the wafer.\n%.0s' {1..200} \
    >"$tmp/text.txt"
  out=$(hidden "$wafer" finetune --base "$share/resources/base-model" --data "$tmp/text.txt" \
    --max-steps 2 --name tuned 2>&1) || fail "finetune from the base model: $out"
  # The studio's first window, offscreen, on the default preset (found from the install).
  shot="$tmp/first-window.png"
  out=$(QT_QPA_PLATFORM=offscreen hidden "$root/usr/bin/wafer-studio" --screenshot "$shot" \
    --quit-after-steps 1 --run 2>&1) || fail "wafer-studio: $out"
  [[ -s "$shot" ]] || fail "no screenshot: $out"
  python3 - "$shot" <<'PY' || fail "the screenshot is not a window-sized PNG"
import struct, sys
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n"
width, height = struct.unpack(">II", data[16:24])
assert width >= 800 and height >= 600, (width, height)
PY
  # Nothing was written beside the installed files (the mount was read-only, but a program that
  # tried would have failed above; this checks the tree is as the package made it).
  extra=$(cd "$root" && find . -newer "$deb" -type f | head)
  [[ -z "$extra" ]] || fail "files appeared in the installed tree: $extra" ;;

dpkg)
  # A real install and removal with dpkg, into a scratch root (its database starts empty, so
  # the libraries the programs depend on are not there: --force-depends, once the dependency on
  # the data has been seen to hold).
  root="$tmp/root"
  mkdir -p "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/info" "$root/home/user/.local/share/wafer-studio"
  touch "$root/var/lib/dpkg/status" "$root/var/lib/dpkg/available"
  echo "a user's run store" >"$root/home/user/.local/share/wafer-studio/runs.sqlite"
  run_dpkg() { dpkg --root="$root" --force-not-root --log=/dev/null "$@" >"$tmp/dpkg.log" 2>&1; }
  # Without its data, wafer-studio does not configure, and dpkg says what is missing.
  run_dpkg -i "$deb" && fail "dpkg configured wafer-studio without wafer-studio-data"
  expect_in "wafer-studio depends on wafer-studio-data (= $version)" "$(cat "$tmp/dpkg.log")"
  run_dpkg --force-depends -i "$data_deb" "$deb" || fail "dpkg -i: $(cat "$tmp/dpkg.log")"
  for package in wafer-studio wafer-studio-data; do
    status=$(dpkg --root="$root" -s "$package" 2>&1) || fail "dpkg -s $package: $status"
    expect_in "Status: install ok installed" "$status"
  done
  [[ -x "$root/usr/bin/wafer" && -f "$root/usr/share/wafer-studio/presets/gpt-nano.yaml" ]] ||
    fail "dpkg -i installed no programs or presets"
  # The data cannot be removed from under the programs.
  run_dpkg -r wafer-studio-data && fail "dpkg removed wafer-studio-data from under wafer-studio"
  expect_in "wafer-studio depends on wafer-studio-data" "$(cat "$tmp/dpkg.log")"
  [[ -f "$root/usr/share/wafer-studio/presets/gpt-nano.yaml" ]] || fail "the refused removal removed data"
  run_dpkg --force-depends -r wafer-studio wafer-studio-data || fail "dpkg -r: $(cat "$tmp/dpkg.log")"
  left=$(cd "$root" && if [[ -d usr ]]; then find usr -type f | head; fi)
  [[ -z "$left" ]] || fail "dpkg -r left program files behind: $left"
  [[ $(cat "$root/home/user/.local/share/wafer-studio/runs.sqlite") == "a user's run store" ]] ||
    fail "removing the packages touched the user's run store" ;;

hardening)
  # Both programs as the package ships them (stripped): PIE, stack protector, _FORTIFY_SOURCE,
  # RELRO, immediate binding and stack-clash protection (cmake/Hardening.cmake). Not control-flow
  # protection (CET): a process runs with it only if every object in it was built with it, and
  # on Debian 12 neither libc, libstdc++, Qt nor the static SQLiteCpp library was.
  dpkg-deb -x "$deb" "$tmp/root" || fail "dpkg-deb -x failed"
  out=$(hardening-check --nocfprotection "$tmp/root/usr/bin/wafer" "$tmp/root/usr/bin/wafer-studio" 2>&1)
  status=$?
  echo "$out"
  [[ $status -eq 0 ]] || fail "hardening-check fails (above)"
  for check in "Position Independent Executable: yes" "Stack protected: yes" \
               "Fortify Source functions: yes" "Read-only relocations: yes" \
               "Immediate binding: yes" "Stack clash protection: yes"; do
    [[ $(grep -c "$check" <<<"$out") -eq 2 ]] || fail "not both programs have \"$check\""
  done ;;

metainfo)
  # The AppStream page: valid (without the network: the screenshots' web address is checked
  # against the repository instead), names the desktop entry the package installs, shows the
  # repository's screenshots at their real sizes, and its newest release is this version.
  extract_both "$tmp/root"
  metainfo=$tmp/root/usr/share/metainfo/example.a_seed_e1140c5a.WaferStudio.metainfo.xml
  out=$(appstreamcli validate --no-net "$metainfo" 2>&1) || fail "appstreamcli validate: $out"
  echo "$out"
  out=$(appstreamcli validate-tree --no-net "$tmp/root" 2>&1) || fail "appstreamcli validate-tree: $out"
  python3 - "$metainfo" "$src/resources/screenshots" "$tmp/root/usr/share/wafer-studio/resources/screenshots" \
    "$version" "$tmp/root/usr/share/applications" <<'PY' || fail "the metainfo does not match the package (above)"
import os, struct, sys
import xml.etree.ElementTree as ET
metainfo, repo_shots, installed_shots, version, applications = sys.argv[1:]
root = ET.parse(metainfo).getroot()
problems = []
launchable = root.find("launchable").text
if not os.path.isfile(os.path.join(applications, launchable)):
    problems.append(f"the launchable {launchable} is not in the package")
images = root.findall("screenshots/screenshot/image")
if len(images) < 3:
    problems.append(f"only {len(images)} screenshots")
for image in images:
    name = image.text.rsplit("/", 1)[-1]
    for folder in (repo_shots, installed_shots):
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            problems.append(f"screenshot {name} is not in {folder}")
            continue
        data = open(path, "rb").read(24)
        size = struct.unpack(">II", data[16:24])
        if size != (int(image.get("width")), int(image.get("height"))):
            problems.append(f"{name} is {size[0]}x{size[1]}, the metainfo says "
                            f"{image.get('width')}x{image.get('height')}")
releases = root.findall("releases/release")
if not releases or releases[0].get("version") != version:
    problems.append(f"the newest release is not {version}")
if root.find("project_license").text != "GPL-3.0-or-later":
    problems.append("the project licence is not GPL-3.0-or-later")
for problem in problems:
    print(problem)
sys.exit(1 if problems else 0)
PY
  ;;

relocated)
  # Any prefix works: the programs find share/wafer-studio beside their bin/.
  prefix="$tmp/opt/wafer"
  cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 ||
    fail "cmake --install: $(cat "$tmp/install.log")"
  export HIDDEN_RO=$prefix HOME="$tmp/home" XDG_DATA_HOME="$tmp/home/data" XDG_CACHE_HOME="$tmp/home/cache"
  unset WAFER_STUDIO_HOME
  mkdir -p "$HOME"
  cd "$tmp" || fail "cd"
  out=$(hidden "$prefix/bin/wafer" --version 2>&1) || fail "wafer --version: $out"
  expect_in "presets and resources: $prefix/share/wafer-studio (install prefix)" "$out"
  out=$(hidden "$prefix/bin/wafer" validate "$prefix/share/wafer-studio/presets/teaching-stream.yaml" 2>&1) ||
    fail "validate: $out"
  # Moved after installing, it still finds its data.
  mv "$prefix" "$tmp/moved"
  export HIDDEN_RO="$tmp/moved"
  out=$(hidden "$tmp/moved/bin/wafer" --version 2>&1) || fail "moved wafer --version: $out"
  expect_in "presets and resources: $tmp/moved/share/wafer-studio (install prefix)" "$out"
  # With no share folder at all, the error names where it looked.
  rm -rf "$tmp/moved/share/wafer-studio"
  out=$(hidden "$tmp/moved/bin/wafer" --version 2>&1) || fail "wafer --version without data: $out"
  expect_in "presets and resources: $tmp/moved/share/wafer-studio (not found)" "$out" ;;

lintian)
  out=$(lintian --tag-display-limit 0 -I "$deb" "$data_deb" 2>&1)
  echo "$out"
  if grep -E '^[EW]: ' <<<"$out"; then
    fail "lintian reports errors or warnings (above)"
  fi ;;

*) fail "unknown case" ;;
esac
echo "ok: $case_name"
