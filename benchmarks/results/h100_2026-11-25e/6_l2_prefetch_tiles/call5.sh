#!/bin/bash
# A/B: GEMV tiles ask L2 for their whole weight box before they wait (l2_prefetch=True) against main's tiles
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
BATCH=8 ROUNDS=3 timeout 170 python -m scratch.ab Qwen3-0.6B main: l2:l2_prefetch=True 2>&1 | grep -v Warning | tee $OUT/ab_b8_Qwen3-0.6B.log
