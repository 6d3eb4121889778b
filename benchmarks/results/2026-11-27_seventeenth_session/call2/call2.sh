#!/bin/bash
# call 2 (2026-11-27, seventeenth session): branch combine-in-o at its second commit. The attention combine in tiles
# of combine_columns columns of a head (32 by default; 128 or 64 = a whole head, as main), and the o projection
# merging the splits itself (merge_splits_in_o, call 1: slower) at 8 splits (64 keys) instead of 16.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s17/call2.sh $OUT/
T=scratch/s17/trees/chunk
timeout 250 python3 benchmarks/ab.py --model Qwen3-0.6B --batch 1 --rounds 3 --passes 1 \
  head=$T:merge_splits_in_o=False,combine_columns=128 c32=$T:merge_splits_in_o=False \
  c16=$T:merge_splits_in_o=False,combine_columns=16 merged_k64=$T:attention_split_keys=64 \
  > $OUT/ab_Qwen3-0.6B.log 2>&1; echo "ab rc=$?"; grep "rounds\||" $OUT/ab_Qwen3-0.6B.log | tail -8; echo "t=$SECONDS"
timeout $((590 - SECONDS)) python3 benchmarks/ab.py --model Llama-3.2-1B --batch 1 --rounds 3 --passes 1 \
  head=$T:merge_splits_in_o=False,combine_columns=64 c32=$T:merge_splits_in_o=False \
  c16=$T:merge_splits_in_o=False,combine_columns=16 \
  > $OUT/ab_Llama-3.2-1B.log 2>&1; echo "ab rc=$?"; grep "rounds\||" $OUT/ab_Llama-3.2-1B.log | tail -8; echo "t=$SECONDS"
