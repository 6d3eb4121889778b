#!/bin/bash
# Sampling without sorting networks (branch sample-select): the GPU sampling tests on the branch, then
# A/B of the sampling step against main (greedy for scale), then a profile of the branch's sampling step.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s19/call3.sh $OUT/
T=scratch/s19/trees/sel
(cd $T && timeout 200 python3 -m pytest -q -x tests/test_sampling.py -p no:cacheprovider -k "not follow") > $OUT/pytest_sampling.log 2>&1
echo "pytest rc=$?"; tail -3 $OUT/pytest_sampling.log; echo "t=$SECONDS"
for M in Qwen3-0.6B Llama-3.2-1B; do
  left=$((560 - SECONDS)); [ $left -lt 60 ] && break
  timeout $left python3 benchmarks/ab.py --model $M --batch 1 --rounds 3 --passes 1 g_main=scratch/s19/trees/main:sample=False \
    s_main=scratch/s19/trees/main:sample=True s_sel=$T:sample=True > $OUT/ab_$M.log 2>&1; echo "ab $M rc=$?"; grep "rounds\||" $OUT/ab_$M.log | tail -7
  echo "t=$SECONDS"
done
