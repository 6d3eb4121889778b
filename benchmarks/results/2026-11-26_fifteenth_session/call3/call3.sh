#!/bin/bash
# call 3 (2026-11-26, fifteenth session): why the o projection merging the splits (fused) measured slower: profiles of
# Qwen3-0.6B on mma (xregs) and fused (fuse-combine), and of Llama-3.2-1B on main and fused
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s15/call3.sh $OUT/
T=scratch/s15/trees
for run in Qwen3-0.6B:mma Qwen3-0.6B:fused Llama-3.2-1B:fused Llama-3.2-1B:main; do
  m=${run%%:*}; t=${run##*:}
  [ $((560 - SECONDS)) -lt 100 ] && { echo "skip $run"; continue; }
  PYTHONPATH=$T/$t timeout $((590 - SECONDS)) python3 benchmarks/profile_decode.py --model $m --out /tmp/p_${t}_$m \
    > $OUT/profile_${m}_$t.log 2>&1; echo "profile $run rc=$?"; cp /tmp/p_${t}_$m/profile.npz $OUT/profile_${m}_$t.npz
  head -4 $OUT/profile_${m}_$t.log | tail -2; echo "t=$SECONDS"
done
