#!/bin/bash
# call 5 (2026-11-26, thirteenth session): main (bbba10f) against poll (main + a task with several dependency
# entries polls the inlined one and the list's first block together, one round trip for all), greedy:
# Qwen3-0.6B and Llama-3.2-1B at batch 1, Llama-3.2-1B at batch 8
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s13/call5.sh $OUT/
T=scratch/s13/trees
for mb in "Qwen3-0.6B 1" "Llama-3.2-1B 1" "Llama-3.2-1B 8"; do
  set -- $mb
  timeout 180 python3 benchmarks/ab.py --model $1 --batch $2 --rounds 3 --passes 1 main=$T/main poll=$T/poll \
    > $OUT/ab_$1_b$2.log 2>&1; echo "ab $1 b$2 rc=$?"
  grep -i "rounds\||" $OUT/ab_$1_b$2.log | tail -8; echo "t=$SECONDS"
done
