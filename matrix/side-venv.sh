#!/usr/bin/env bash
# Build (once) a side environment .venv-torch-VERSION with that torch and compilescope
# (editable, this checkout) and its test extra. Prints the environment's python.
#
# Only the pinned version (constraints.txt) has a CPU wheel within reach; the others are
# PyPI's CUDA builds with their nvidia-* libraries (about 3 GB to fetch, 5-7 GB installed),
# which run on a CPU. Nothing goes to pip's cache (--no-cache-dir): a removed side
# environment leaves no wheel behind.
set -euo pipefail
cd "$(dirname "$0")/.."
version="${1:?usage: matrix/side-venv.sh TORCH_VERSION}"
python="${PYTHON:-python3}"
venv=".venv-torch-$version"
torch_stamp="$venv/.torch-installed"
stamp="$venv/.installed"
if [ ! -f "$torch_stamp" ]; then
  "$python" -m venv "$venv" >&2
  "$venv/bin/python" -m pip install --quiet --no-cache-dir "torch==$version" >&2
  got="$("$venv/bin/python" -c 'import torch; print(torch.__version__.split("+")[0])')"
  if [ "$got" != "$version" ]; then
    echo "side-venv: asked for torch $version, $venv has $got" >&2
    exit 1
  fi
  touch "$torch_stamp"
fi
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  "$venv/bin/python" -m pip install --quiet --no-cache-dir -e '.[dev]' >&2
  touch "$stamp"
fi
echo "$venv/bin/python"
