#!/bin/bash
# call 7 (2026-11-26, fourteenth session): the staging barrier initialised once a launch, its phases counted in
# shared memory ("once"), against main at b2e6cf7 (a fresh barrier every staged task, with its fences); the staging
# tests, now with two CTAs running many staged tiles each, on both; Qwen3-0.6B batch 1 greedy
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s14/call7.sh $OUT/
T=scratch/s14/trees
for t in maint once; do
  (cd $T/$t && PYTHONPATH=$PWD timeout 100 python3 -m pytest -q -n 4 -p no:cacheprovider tests/test_staging.py \
    > $OUT/pytest_$t.log 2>&1); echo "pytest $t rc=$?"; tail -2 $OUT/pytest_$t.log; echo "t=$SECONDS"
done
timeout 240 python3 benchmarks/ab.py --model Qwen3-0.6B --batch 1 --rounds 3 --passes 1 main once=$T/once \
  > $OUT/ab_qwen_once.log 2>&1; echo "ab rc=$?"; grep -i "rounds\||" $OUT/ab_qwen_once.log | tail -6; echo "t=$SECONDS"
