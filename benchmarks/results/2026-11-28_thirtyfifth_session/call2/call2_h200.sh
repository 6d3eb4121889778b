#!/bin/bash
# Session 36, call 2 (nvidia-h200, carry ["scratch/s36"]): the sampler's fast path (the k-th best of the lists'
# heads in registers, one pass into the pool) against main's bitonic sampler, greedy and sampling in each process.
# Call 1: the first form's pick took 48.5 us critical (Qwen3-0.6B sampling +76 us vs main's +67).
# Predicted: the pick ~8 us, sampling's cost over greedy ~+15 us (Qwen3-0.6B), against main's +67.
# nospill: the same without the slow path's call (measurement only): the driver's 32/32 spill instructions -> 0/0.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s36/call2_h200.sh $OUT/
M=$PWD/scratch/s36/trees/main N=$PWD/scratch/s36/trees/nospill
for m in Qwen3-0.6B Llama-3.2-1B; do
  timeout 260 python3 benchmarks/ab.py --model $m --rounds 3 --passes 1 main_g=$M:sample=False main_s=$M:sample=True \
    new_g:sample=False new_s:sample=True nospill_s=$N:sample=True > $OUT/ab_$m.log 2> $OUT/ab_$m.err
  echo "ab $m rc=$? t=$SECONDS"; cat $OUT/ab_$m.log; tail -2 $OUT/ab_$m.err
done
left=$((575 - SECONDS)); [ $left -gt 60 ] && timeout $left python3 benchmarks/profile_decode.py --model Qwen3-0.6B \
  --sample --out $OUT/prof > $OUT/prof.log 2>&1
echo "profile rc=$? t=$SECONDS"; head -3 $OUT/prof/summary.txt 2>/dev/null
grep -i "| sample\|next_token" $OUT/prof/waterfall.md 2>/dev/null | head -6
(cd $OUT && tar czf all.tgz ab_* prof prof.log 2>/dev/null && rm -rf prof)
