#!/bin/bash
# call 2 (2026-11-26, ninth session): the attention tile issuing all its loads after the wait at once (tables in the
# heads' shape), with and without loading the next KV block before the math on the current one, against main
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s9/trees
for mb in "Qwen3-0.6B 1" "Llama-3.2-1B 1" "Llama-3.2-1B 8"; do
  set -- $mb
  timeout 190 python3 benchmarks/ab.py --model $1 --batch $2 --rounds 3 --passes 1 main=$T/main hoist=$T/hoist hoistnb=$T/hoistnb > $OUT/ab_hoist_$1_b$2.log 2>&1; echo "ab $1 b$2 rc=$?"
  tail -5 $OUT/ab_hoist_$1_b$2.log; echo "t=$SECONDS"
done
