#!/bin/bash
# call 4 (2026-11-26, sixteenth session): branch merge-lists (combine marks + sample_merge: the pick merges 17
# merged lists, not 264) against main (fc93b48), sampling (ab.py --sample's settings) and greedy; a profile of the
# branch's sampling step; the branch's sampling and profiler tests on the GPU.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s16/call4.sh $OUT/
T=scratch/s16/trees
for M in Qwen3-0.6B Llama-3.2-1B; do
  timeout 200 python3 benchmarks/ab.py --model $M --batch 1 --rounds 3 --passes 1 g_main=$T/main:sample=False \
    s_main=$T/main:sample=True g_merge=$T/merge:sample=False s_merge=$T/merge:sample=True > $OUT/ab_$M.log 2>&1
  echo "ab $M rc=$?"; grep "rounds\||" $OUT/ab_$M.log | tail -10; echo "t=$SECONDS"
done
[ $((590 - SECONDS)) -lt 100 ] && exit 0
PYTHONPATH=$T/merge timeout 150 python3 benchmarks/profile_decode.py --model Qwen3-0.6B --sample --out /tmp/ps \
  > $OUT/profile_Qwen3-0.6B_sample.log 2>&1; echo "profile rc=$?"; cp /tmp/ps/profile.npz $OUT/profile_Qwen3-0.6B_sample.npz
head -4 $OUT/profile_Qwen3-0.6B_sample.log | tail -2; echo "t=$SECONDS"
[ $((590 - SECONDS)) -lt 40 ] && exit 0
(cd $T/merge && PYTHONPATH=$PWD timeout $((585 - SECONDS)) python3 -m pytest -q -n 8 -p no:cacheprovider \
  tests/test_sampling.py tests/test_profiler.py > $OUT/pytest_gpu.log 2>&1); echo "pytest rc=$?"
tail -3 $OUT/pytest_gpu.log | cut -c1-300; echo "t=$SECONDS"
