#!/bin/bash
# call 1 (2026-11-27, eighteenth session): branch qkv-split-b1 (Tiling.qkv_split_batch1_min_k): q/k/v split K at
# batch 1 (the attention adds the partial sums) against not (main's rule), one tree, three models on an H200.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s18/call1.sh $OUT/
T=scratch/s18/trees/b1split
for M in Qwen3-8B Llama-3.2-1B Qwen3-1.7B; do
  left=$((585 - SECONDS)); [ $left -lt 60 ] && break
  timeout $left python3 benchmarks/ab.py --model $M --batch 1 --rounds 3 --passes 1 main=$T split=$T:qkv_split_batch1_min_k=1 \
    > $OUT/ab_$M.log 2>&1; echo "ab $M rc=$?"; grep "rounds\||" $OUT/ab_$M.log | tail -6; echo "t=$SECONDS"
done
