#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Builds the Debian packages: installs what is missing, builds Wafer Studio in build-package/
# (Release with Debian's hardening flags, installed under /usr) and runs CPack. Prints the two
# .debs' paths: wafer-studio (the programs) and wafer-studio-data (what they read).
# Usage: installer/package.sh [BUILD_DIR]
#   then: sudo apt install ./wafer-studio_<version>_amd64.deb ./wafer-studio-data_<version>_all.deb
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build-package}
"$root/scripts/build.sh" "$build" -DCMAKE_INSTALL_PREFIX=/usr -DWAFER_BUILD_TESTS=OFF \
  -DWAFER_BUILD_BENCHMARKS=OFF
(cd "$build" && cpack -G DEB >/dev/null)
ls "$build"/wafer-studio_*_amd64.deb "$build"/wafer-studio-data_*_all.deb
