#!/bin/bash
# call 6 (2026-11-26, fourteenth session): a split-K box's row copies issued by every warp in turn (after a CTA
# barrier) instead of all by thread 0 ("par"), against main at b2e6cf7; Qwen3-0.6B batch 1 greedy; the staging
# tests on par
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s14/call6.sh $OUT/
T=scratch/s14/trees
(cd $T/par && PYTHONPATH=$PWD timeout 120 python3 -m pytest -q -n 4 -p no:cacheprovider tests/test_staging.py \
  > $OUT/pytest_par.log 2>&1); echo "pytest rc=$?"; tail -2 $OUT/pytest_par.log; echo "t=$SECONDS"
timeout 240 python3 benchmarks/ab.py --model Qwen3-0.6B --batch 1 --rounds 3 --passes 1 main par=$T/par \
  > $OUT/ab_qwen_par.log 2>&1; echo "ab rc=$?"; grep -i "rounds\||" $OUT/ab_qwen_par.log | tail -6; echo "t=$SECONDS"
