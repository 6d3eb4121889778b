#!/bin/bash
# call 8 (2026-11-27, seventeenth session): main (c4e30e7) on an H100: Qwen3-0.6B's and Llama-3.2-1B's profiles and
# waterfalls, and each phase's library bound beside them (phase_bounds.py), for issue 14's H100 targets
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s17/call8.sh $OUT/
one() {  # model, seconds by which its profile and its bounds must be done
  M=$1
  timeout $(($2 - 90 - SECONDS)) python3 benchmarks/profile_decode.py --model $M --out /tmp/p_$M > $OUT/profile_$M.log 2>&1
  echo "profile $M rc=$?"; cp /tmp/p_$M/profile.npz $OUT/profile_$M.npz; cp /tmp/p_$M/waterfall.md $OUT/waterfall_$M.md
  head -3 $OUT/profile_$M.log; echo "t=$SECONDS"
  (cd benchmarks && timeout $(($2 - SECONDS)) python3 phase_bounds.py --model $M --waterfall $OUT/waterfall_$M.md \
    --out $OUT/phase_bounds_$M.md > $OUT/phase_bounds_$M.log 2>&1); echo "bounds $M rc=$?"; cat $OUT/phase_bounds_$M.md
  echo "t=$SECONDS"
}
one Qwen3-0.6B 290
one Llama-3.2-1B 590
