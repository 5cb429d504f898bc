#!/usr/bin/env bash
# Installs what building and testing KDL needs, from Debian's packages (and lit/filecheck from PyPI).
# Safe to run again. Needs root (or sudo) for apt-get.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
pkgs=(antlr4 libantlr4-runtime-dev libfmt-dev catch2 cmake ninja-build clang libclang-rt-14-dev python3 distcc)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: Debian packages present"
fi
if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "setup: warning: no CUDA toolkit (nvcc) found; kdlc builds, but emitted code cannot be compiled" >&2
fi
