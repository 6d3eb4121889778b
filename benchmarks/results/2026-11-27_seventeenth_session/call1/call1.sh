#!/bin/bash
# call 1 (2026-11-27, seventeenth session): branch combine-in-o (the o projection merges the attention splits as it
# loads them; kv_append tiles cache the new key and value; no combine phase). A/B on one tree: the option off
# (attention_combine + gemv_residual, as main) against on, both models; then a profile of Qwen3-0.6B with it on.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s17/call1.sh $OUT/
T=scratch/s17/trees/merge
for M in Qwen3-0.6B Llama-3.2-1B; do
  timeout 200 python3 benchmarks/ab.py --model $M --batch 1 --rounds 3 --passes 1 combine=$T:merge_splits_in_o=False \
    merged=$T > $OUT/ab_$M.log 2>&1; echo "ab $M rc=$?"; grep "rounds\||" $OUT/ab_$M.log | tail -6; echo "t=$SECONDS"
done
PYTHONPATH=$T timeout $((590 - SECONDS)) python3 benchmarks/profile_decode.py --model Qwen3-0.6B --out /tmp/pg \
  > $OUT/profile_Qwen3-0.6B.log 2>&1; echo "profile rc=$?"; cp /tmp/pg/profile.npz $OUT/profile_Qwen3-0.6B.npz
head -4 $OUT/profile_Qwen3-0.6B.log | tail -2; echo "t=$SECONDS"
