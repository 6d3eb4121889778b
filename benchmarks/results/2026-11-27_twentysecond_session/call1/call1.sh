#!/bin/bash
# Fresh per-phase accounts on main (383892d): Qwen3-30B-A3B's first 8 layers (issue 16) and Qwen3-0.6B (issue 14).
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
timeout 280 python3 benchmarks/profile_decode.py --model Qwen3-30B-A3B --layers 8 --out /tmp/p_moe > $OUT/profile_moe.log 2>&1; echo "moe rc=$? t=$SECONDS"
cp /tmp/p_moe/waterfall.md $OUT/waterfall_moe.md; head -3 $OUT/profile_moe.log
timeout $((560 - SECONDS)) python3 benchmarks/profile_decode.py --model Qwen3-0.6B --out /tmp/p_q > $OUT/profile_q.log 2>&1; echo "q rc=$? t=$SECONDS"
cp /tmp/p_q/waterfall.md $OUT/waterfall_q.md; head -3 $OUT/profile_q.log
