#!/bin/bash
# Issue 16: Qwen3-30B-A3B's first 8 layers, main against the router tiled narrower (router) and that plus the
# route ranking experts in one pass (both); then the profile of both.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s22/trees
timeout 400 python3 scratch/s22/ab.py --model Qwen3-30B-A3B --layers 8 --rounds 3 --passes 1 \
  main=$T/main router=$T/router both=$T/both main_again=$T/main > $OUT/ab_moe.log 2> $OUT/ab_moe.err; echo "ab rc=$? t=$SECONDS"
tail -8 $OUT/ab_moe.log
PYTHONPATH=$T/both timeout $((570 - SECONDS)) python3 benchmarks/profile_decode.py --model Qwen3-30B-A3B --layers 8 --out /tmp/p_both > $OUT/profile_both.log 2>&1; echo "profile rc=$? t=$SECONDS"
cp /tmp/p_both/waterfall.md $OUT/waterfall_both.md; head -3 $OUT/profile_both.log
