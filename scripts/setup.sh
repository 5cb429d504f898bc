#!/usr/bin/env bash
# Installs what building and testing KDL needs, from Debian's packages, and a Python virtual environment
# .venv/ at the repository root with pytest, numpy and torch from PyPI (the kdl package's tests and the
# PyTorch extension checks; KDL_SETUP_NO_TORCH=1 leaves torch out: it is ~5 GB with its CUDA libraries,
# and it is left out, with a warning, where the disk has too little room for it),
# and NVIDIA's nvdisasm wheel (6 MB: the sm90a SASS check).
# Safe to run again: it installs only what is missing. Needs root (or sudo) for apt-get.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
pkgs=(antlr4 libantlr4-runtime-dev libfmt-dev catch2 cmake ninja-build clang libclang-rt-14-dev binutils python3 python3-venv distcc)
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

# The Python environment, beside the checkout's build/ (git-ignored).
venv="$(cd "$(dirname "$0")/.." && pwd)/.venv"
if ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
  echo "setup: creating $venv"
  python3 -m venv --clear "$venv"
fi
want=(pytest numpy)
missing=()
for m in "${want[@]}"; do
  "$venv/bin/python" -c "import $m" >/dev/null 2>&1 || missing+=("$m")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]} into .venv (PyPI)"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-cache-dir "${missing[@]}"
else
  echo "setup: .venv has ${want[*]}"
fi
# torch is optional: the tests that need it say "SKIP: ... no torch" without it. PyPI's wheel pulls
# NVIDIA's CUDA libraries: about 5.5 GB installed, and about 8.5 GB at the peak while pip unpacks. With
# less than 12 GiB free (KDL_SETUP_TORCH_ROOM_GIB overrides) it is left out, saying so, instead of
# failing setup half-way; what a failed try installed is taken out again, not left filling the disk.
free_kib() { df -Pk "$1" 2>/dev/null | awk 'NR == 2 { print $4 }'; }
need_kib=$((${KDL_SETUP_TORCH_ROOM_GIB:-12} * 1024 * 1024))
if [ "${KDL_SETUP_NO_TORCH:-0}" = 1 ]; then
  echo "setup: KDL_SETUP_NO_TORCH=1: torch left out (tests that need it will say SKIP)"
elif "$venv/bin/python" -c "import torch" >/dev/null 2>&1; then
  echo "setup: .venv has torch"
else
  tmp=${TMPDIR:-/tmp}
  room=$(free_kib "$venv"); room_tmp=$(free_kib "$tmp")
  [ -n "$room_tmp" ] && [ "$room_tmp" -lt "${room:-0}" ] && room=$room_tmp
  if [ -n "$room" ] && [ "$room" -lt "$need_kib" ]; then
    echo "setup: warning: $((room / 1024)) MiB free where torch would go (setup asks for" \
         "${KDL_SETUP_TORCH_ROOM_GIB:-12} GiB: it takes about 8.5 GB while installing); torch left out, the tests that need it will say SKIP" >&2
  else
    echo "setup: installing torch into .venv (PyPI, about 5.5 GB)"
    before=$("$venv/bin/python" -m pip list --format=freeze --disable-pip-version-check 2>/dev/null | cut -d= -f1 | sort)
    if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-cache-dir torch; then
      echo "setup: warning: installing torch failed (above); taking out what it installed and going on" \
           "without it: the tests that need torch will say SKIP" >&2
      after=$("$venv/bin/python" -m pip list --format=freeze --disable-pip-version-check 2>/dev/null | cut -d= -f1 | sort)
      added=$(comm -13 <(echo "$before") <(echo "$after"))
      if [ -n "$added" ]; then
        # shellcheck disable=SC2086
        "$venv/bin/python" -m pip uninstall -q -y --disable-pip-version-check $added || true
      fi
    fi
  fi
fi
# nvdisasm (the CUDA toolkit here ships none), for the test that reads the sm90a k-loop's SASS.
if ! compgen -G "$venv/lib/python3*/site-packages/nvidia/cu*/bin/nvdisasm" >/dev/null; then
  echo "setup: installing nvidia-cuda-nvdisasm into .venv (PyPI)"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-cache-dir "nvidia-cuda-nvdisasm>=13,<14"
fi
