#!/bin/bash
# sample-select with its partial's rounds a loop (sel4, exact), and a bound (not exact, measurement only: lists of
# 4, the sorting networks' path compiled out, so the pick's registers are the selection's alone) against main.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s19/call6.sh $OUT/
timeout 560 python3 benchmarks/ab.py --model Qwen3-0.6B --batch 1 --rounds 3 --passes 1 --sample s_main=scratch/s19/trees/main \
  s_sel4=scratch/s19/trees/sel4 s_bound=scratch/s19/trees/bound > $OUT/ab.log 2>&1; echo "ab rc=$?"
grep "rounds\||" $OUT/ab.log | tail -8; echo "t=$SECONDS"
