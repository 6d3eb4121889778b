#!/bin/bash
# Why sample-select measured slower (call 3): profiles of the sampling step, main and the branch (sel2: the pick's
# tries with fewer live tensors, the sorting networks' path a function of its own), then an A/B of the two.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s19/call4.sh $OUT/
for V in main sel2; do
  PYTHONPATH=scratch/s19/trees/$V timeout 170 python3 benchmarks/profile_decode.py --model Qwen3-0.6B --sample --out /tmp/p_$V \
    > $OUT/profile_$V.log 2>&1; echo "profile $V rc=$?"; cp /tmp/p_$V/profile.npz $OUT/profile_$V.npz
  head -4 $OUT/profile_$V.log | tail -2; echo "t=$SECONDS"
done
left=$((580 - SECONDS))
timeout $left python3 benchmarks/ab.py --model Qwen3-0.6B --batch 1 --rounds 3 --passes 1 --sample s_main=scratch/s19/trees/main \
  s_sel2=scratch/s19/trees/sel2 > $OUT/ab.log 2>&1; echo "ab rc=$?"; grep "rounds\||" $OUT/ab.log | tail -7; echo "t=$SECONDS"
