#!/bin/bash
# call 2 (2026-11-26, fourteenth session): why Llama-3.2-1B is slower staged. A/B: stage tree staging off, on, and
# "reserve" (staging off but the launch's shared memory enlarged as if on: the L1 carve-out alone); profiles of
# Llama-3.2-1B staged and not.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s14/call2.sh $OUT/
T=scratch/s14/trees
timeout 200 python3 benchmarks/ab.py --model Llama-3.2-1B --batch 1 --rounds 3 --passes 1 \
  nostage=$T/stage:stage_weights=False stage=$T/stage reserve=$T/reserve:stage_weights=False > $OUT/ab_llama.log 2>&1
echo "ab rc=$?"; grep -i "rounds\||" $OUT/ab_llama.log | tail -8; echo "t=$SECONDS"
for v in stage nostage; do
  opt=""; [ $v = nostage ] && opt="--option stage_weights=False"
  PYTHONPATH=$T/stage timeout 170 python3 benchmarks/profile_decode.py --model Llama-3.2-1B $opt --out /tmp/p_$v \
    > $OUT/profile_llama_$v.log 2>&1; echo "profile $v rc=$?"
  cp /tmp/p_$v/profile.npz $OUT/profile_llama_$v.npz; head -5 $OUT/profile_llama_$v.log; echo "t=$SECONDS"
done
