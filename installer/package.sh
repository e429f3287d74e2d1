#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Builds the Debian package: installs what is missing, builds Wafer Studio in build-package/
# (Release, installed under /usr) and runs CPack. Prints the .deb's path.
# Usage: installer/package.sh [BUILD_DIR]     then: sudo apt install ./wafer-studio_<version>_amd64.deb
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build-package}
"$root/scripts/build.sh" "$build" -DCMAKE_INSTALL_PREFIX=/usr -DWAFER_BUILD_TESTS=OFF \
  -DWAFER_BUILD_BENCHMARKS=OFF
(cd "$build" && cpack -G DEB >/dev/null)
ls "$build"/wafer-studio_*_amd64.deb
