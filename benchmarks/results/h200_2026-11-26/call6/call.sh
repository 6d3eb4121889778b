#!/bin/bash
# call 6 (2026-11-26): Llama-3.2-1B's batch-1 profile on the committed tree (32 x 256 blocks)
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
timeout 150 python3 benchmarks/profile_decode.py --model Llama-3.2-1B --out /tmp/pl > /tmp/pl.log 2>&1; echo "profile rc=$?"
cp /tmp/pl/waterfall.md $OUT/waterfall_Llama-3.2-1B.md; cp /tmp/pl/profile.npz $OUT/profile_Llama-3.2-1B.npz; grep "decode step" /tmp/pl.log
