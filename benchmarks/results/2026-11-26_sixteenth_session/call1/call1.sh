#!/bin/bash
# call 1 (2026-11-26, sixteenth session): main (fc93b48). Llama-3.2-1B at 32-key attention splits (the default since
# the fifteenth session) against 64 and against 16 keys in 16-key blocks; Qwen3-0.6B against 16/16; profiles of
# main's greedy step for both models (the waterfalls at 16 splits).
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s16/call1.sh $OUT/
timeout 200 python3 benchmarks/ab.py --model Llama-3.2-1B --batch 1 --rounds 3 --passes 1 main \
  k64:attention_split_keys=64 k16b16:attention_split_keys=16,attention_block=16 > $OUT/ab_Llama-3.2-1B.log 2>&1; echo "ab rc=$?"
grep "|" $OUT/ab_Llama-3.2-1B.log | tail -4; echo "t=$SECONDS"
timeout 150 python3 benchmarks/ab.py --model Qwen3-0.6B --batch 1 --rounds 3 --passes 1 main \
  k16b16:attention_split_keys=16,attention_block=16 > $OUT/ab_Qwen3-0.6B.log 2>&1; echo "ab rc=$?"
grep "|" $OUT/ab_Qwen3-0.6B.log | tail -3; echo "t=$SECONDS"
for M in Qwen3-0.6B Llama-3.2-1B; do
  [ $((590 - SECONDS)) -lt 90 ] && break
  timeout $((590 - SECONDS)) python3 benchmarks/profile_decode.py --model $M --out /tmp/p_$M > $OUT/profile_$M.log 2>&1
  echo "profile $M rc=$?"; cp /tmp/p_$M/profile.npz $OUT/profile_$M.npz; head -3 $OUT/profile_$M.log; echo "t=$SECONDS"
done
