#!/bin/bash
# call 3 (2026-11-26, fourteenth session): the branch's final tree (staging on where every projection stages):
# its GPU tests, then A/B against main (05f9c26), greedy batch 1, Qwen3-0.6B (stages) and Llama-3.2-1B (does not)
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s14/call3.sh $OUT/
T=scratch/s14/trees
(cd $T/stage && PYTHONPATH=$PWD timeout 240 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_staging.py \
  tests/test_megakernel.py tests/test_models.py > $OUT/pytest_gpu.log 2>&1); echo "pytest rc=$?"; tail -4 $OUT/pytest_gpu.log
echo "t=$SECONDS"
for m in Qwen3-0.6B Llama-3.2-1B; do
  timeout $(( 590 - SECONDS < 165 ? 590 - SECONDS : 165 )) python3 benchmarks/ab.py --model $m --batch 1 --rounds 3 --passes 1 main=$T/main \
    stage=$T/stage > $OUT/ab_$m.log 2>&1; echo "ab $m rc=$?"
  grep -i "rounds\||" $OUT/ab_$m.log | tail -6; echo "t=$SECONDS"
done
