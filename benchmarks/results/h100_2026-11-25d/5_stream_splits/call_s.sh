#!/bin/bash
# batch 8: more K splits of the o and down projections (stream_k_splits) now that only the norm tiles read all parts
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
BATCH=8 ROUNDS=5 timeout 200 python -m scratch.ab Llama-3.2-1B default: s8:stream_k_splits=8 2>&1 | grep -v Warning | tee $OUT/ab_b8_llama_splits.log
BATCH=8 ROUNDS=5 timeout 230 python -m scratch.ab Qwen3-0.6B default: s8:stream_k_splits=8 s16:stream_k_splits=16 2>&1 | grep -v Warning | tee $OUT/ab_b8_qwen_splits.log
