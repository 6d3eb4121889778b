#!/bin/bash
# call 4 (2026-11-26, tenth session): profiles of main (77aebb5) with three timestamps inside each GEMV tile
# (scratch diagnostic tree trees/marks: after its x / RMSNorm pass, after its last products, after its stores)
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s10/call4.sh $OUT/
R=$PWD
for m in Qwen3-0.6B Llama-3.2-1B; do
  (cd scratch/s10/trees/marks && PYTHONPATH=$PWD timeout 200 python3 $R/benchmarks/profile_decode.py --model $m --out /tmp/p_$m > $OUT/profile_$m.log 2>&1); echo "profile $m rc=$?"
  cp /tmp/p_$m/profile.npz $OUT/profile_$m.npz; cp /tmp/p_$m/waterfall.md $OUT/waterfall_$m.md
  tail -3 $OUT/profile_$m.log; echo "t=$SECONDS"
done
