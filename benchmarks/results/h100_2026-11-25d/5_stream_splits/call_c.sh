#!/bin/bash
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
timeout 250 python -m scratch.check8 Llama-3.2-1B 2>&1 | grep -v Warn | tee $OUT/check8.log
