#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Installs every Debian 12 package that Wafer Studio's build, tests and app need.
# Idempotent: does nothing when all packages are present; runs `apt-get update` only when
# something is missing. Usage: installer/deps.sh [--bench]   (--bench adds python3-torch,
# the PyTorch reference the speed benchmark compares against).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  qt6-base-dev qt6-base-dev-tools qt6-svg-dev libqcustomplot-dev libgl-dev
  libsqlite3-dev libsqlitecpp-dev sqlite3 libyaml-cpp-dev libeigen3-dev
  libcli11-dev libfmt-dev nlohmann-json3-dev libopenblas-dev libdnnl-dev libssl-dev
  libzip-dev zlib1g-dev libpcre2-dev libicu-dev
  libhdf5-dev python3-h5py
  libgtest-dev libgmock-dev libbenchmark-dev
  libhwy-dev
  openmpi-bin libopenmpi-dev iproute2
  slurmctld slurmd slurm-client munge
  xvfb xauth python3
  help2man lintian desktop-file-utils shared-mime-info man-db dpkg-dev devscripts appstream
)
if [[ "${1:-}" == "--bench" ]]; then
  packages+=(python3-torch python3-numpy)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

echo "deps: installing ${missing[*]}" >&2
SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null; then SUDO=sudo; else
    echo "deps: missing packages (${missing[*]}) and not root; run as root or install them." >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
