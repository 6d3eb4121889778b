#!/bin/bash
# call 3 (2026-11-27, seventeenth session): branch stage-fit: at batch 1 every projection tiled so that its weight
# boxes fit the staging area (Llama-3.2-1B's MLP boxes did not: it staged nothing). A/B against main (c4e30e7),
# two trees; then a profile of Llama-3.2-1B on the branch.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s17/call3.sh $OUT/
timeout 300 python3 benchmarks/ab.py --model Llama-3.2-1B --batch 1 --rounds 3 --passes 2 \
  main=scratch/s17/trees/main fit=scratch/s17/trees/fit \
  > $OUT/ab_Llama-3.2-1B.log 2>&1; echo "ab rc=$?"; grep "rounds\||" $OUT/ab_Llama-3.2-1B.log | tail -8; echo "t=$SECONDS"
PYTHONPATH=scratch/s17/trees/fit timeout $((590 - SECONDS)) python3 benchmarks/profile_decode.py --model Llama-3.2-1B \
  --out /tmp/pl > $OUT/profile_Llama-3.2-1B.log 2>&1; echo "profile rc=$?"
cp /tmp/pl/profile.npz $OUT/profile_Llama-3.2-1B.npz; head -4 $OUT/profile_Llama-3.2-1B.log | tail -3; echo "t=$SECONDS"
