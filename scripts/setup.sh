#!/usr/bin/env bash
# Installs what building and testing KDL needs, from Debian's packages, and a Python virtual environment
# .venv/ at the repository root with pytest, numpy and torch from PyPI (the kdl package's tests and the
# PyTorch extension checks; KDL_SETUP_NO_TORCH=1 leaves torch out: it is ~5 GB with its CUDA libraries),
# and NVIDIA's nvdisasm wheel (6 MB: the sm90a SASS check).
# Safe to run again: it installs only what is missing. Needs root (or sudo) for apt-get.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
pkgs=(antlr4 libantlr4-runtime-dev libfmt-dev catch2 cmake ninja-build clang libclang-rt-14-dev python3 python3-venv distcc)
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
if [ "${KDL_SETUP_NO_TORCH:-0}" != 1 ]; then want+=(torch); fi
missing=()
for m in "${want[@]}"; do
  "$venv/bin/python" -c "import $m" >/dev/null 2>&1 || missing+=("$m")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]} into .venv (PyPI)"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "${missing[@]}"
else
  echo "setup: .venv has ${want[*]}"
fi
# nvdisasm (the CUDA toolkit here ships none), for the test that reads the sm90a k-loop's SASS.
if ! compgen -G "$venv/lib/python3*/site-packages/nvidia/cu*/bin/nvdisasm" >/dev/null; then
  echo "setup: installing nvidia-cuda-nvdisasm into .venv (PyPI)"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "nvidia-cuda-nvdisasm>=13,<14"
fi
