#!/bin/bash
# call 8 (2026-11-26, ninth session): the attention combine caching the new key/value before its merge (their loads
# then issued with the merge's) against HEAD (baa9310), batch 1
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s9/trees
for m in Qwen3-0.6B Llama-3.2-1B; do
  timeout 115 python3 benchmarks/ab.py --model $m --batch 1 --rounds 3 --passes 1 head=$T/head comb=$T/comb > $OUT/ab_comb_$m.log 2>&1; echo "ab $m rc=$?"
  tail -4 $OUT/ab_comb_$m.log; echo "t=$SECONDS"
done
