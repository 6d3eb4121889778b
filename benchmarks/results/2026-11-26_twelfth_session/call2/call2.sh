#!/bin/bash
# call 2 (2026-11-26, twelfth session): the new sampler (branch sampling-topk: top-C lists per lm_head tile by a
# bitonic network, a pick reading list heads then deeper entries while they rank; both tiles noinline) against
# main (1ab2318): ab --sample on Qwen3-0.6B and Llama-3.2-1B, a profile of the sampling step, the sampling tests
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s12/call2.sh $OUT/
T=scratch/s12/trees
for m in Qwen3-0.6B Llama-3.2-1B; do
  timeout 200 python3 benchmarks/ab.py --model $m --batch 1 --rounds 3 --passes 1 --sample main topk=$T/topk > $OUT/ab_sample_$m.log 2>&1; echo "ab $m rc=$?"
  grep -i "rounds\|median" $OUT/ab_sample_$m.log | tail -3; echo "t=$SECONDS"
done
(cd $T/topk && PYTHONPATH=$PWD timeout 150 python3 -m pytest -q -x tests/test_sampling.py > $OUT/pytest_sampling.log 2>&1; echo "pytest rc=$?"); tail -2 $OUT/pytest_sampling.log; echo "t=$SECONDS"
PYTHONPATH=$T/topk timeout $((590 - SECONDS)) python3 benchmarks/profile_decode.py --model Qwen3-0.6B --sample --out /tmp/pq > $OUT/profile_topk_qwen_sample.log 2>&1; echo "profile rc=$?"
cp /tmp/pq/profile.npz $OUT/profile_topk_qwen_sample.npz; head -16 $OUT/profile_topk_qwen_sample.log; echo "t=$SECONDS"
