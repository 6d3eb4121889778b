#!/bin/bash
# Prepared in the eighteenth session for the next one: branch stage-tma (the staging ring of call 3, each weight block
# one 2-D TMA copy by the weights' tensor map; Tiling.stage_maps=False gives the per-row copies back). Staging tests on
# the GPU (both forms), then A/B: main, tma (maps), rows (stage_maps=False). Make main's tree first:
#   rm -rf scratch/s19/trees/main && mkdir -p scratch/s19/trees/main && git archive main megagen tests pyproject.toml \
#     $(git ls-files 'benchmarks/*.py') | tar -x -C scratch/s19/trees/main
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s19/call1.sh $OUT/
T=scratch/s19/trees/tma
(cd $T && timeout 240 python3 -m pytest -q -x tests/test_staging.py -p no:cacheprovider) > $OUT/pytest_staging.log 2>&1
echo "pytest rc=$?"; tail -3 $OUT/pytest_staging.log; echo "t=$SECONDS"
for M in Llama-3.2-1B Qwen3-0.6B; do
  left=$((590 - SECONDS)); [ $left -lt 60 ] && break
  timeout $left python3 benchmarks/ab.py --model $M --batch 1 --rounds 3 --passes 1 main=scratch/s19/trees/main \
    tma=$T rows=$T:stage_maps=False > $OUT/ab_$M.log 2>&1; echo "ab $M rc=$?"; grep "rounds\||" $OUT/ab_$M.log | tail -7
  echo "t=$SECONDS"
done
