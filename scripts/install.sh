#!/usr/bin/env bash
# Install megagen and what it needs into the current Python.
# Keeps an existing torch (e.g. a CUDA build); otherwise installs the CPU build pinned below,
# so pip never pulls CUDA wheels on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! "$PY" -c "import torch" 2>/dev/null; then
  "$PY" -m pip install -q torch==2.13.0
fi
"$PY" -m pip install -q -e ".[test]"
