#!/bin/bash
# call 3 (2026-11-27, eighteenth session): branch stage-ring at its second commit (pieces are the weight blocks of
# the register path, a row block's products reduced once; one bulk copy a row, by the first warp). Staging tests on
# the GPU, then A/B against main, two trees.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s18/call3.sh $OUT/
R=scratch/s18/trees/ring
(cd $R && timeout 240 python3 -m pytest -q -x tests/test_staging.py -p no:cacheprovider) > $OUT/pytest_staging.log 2>&1
echo "pytest rc=$?"; tail -3 $OUT/pytest_staging.log; echo "t=$SECONDS"
for M in Llama-3.2-1B Qwen3-0.6B Qwen3-1.7B; do
  left=$((590 - SECONDS)); [ $left -lt 60 ] && break
  timeout $left python3 benchmarks/ab.py --model $M --batch 1 --rounds 3 --passes 1 main=scratch/s18/trees/main ring=$R \
    > $OUT/ab_$M.log 2>&1; echo "ab $M rc=$?"; grep "rounds\||" $OUT/ab_$M.log | tail -6; echo "t=$SECONDS"
done
