#!/bin/bash
# call 2 (2026-11-26, eighth session): batch-1 GEMV tiles from a latency-aware cost, each phase choosing 32x256 or 16x512 blocks
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
for m in Llama-3.2-1B Qwen3-0.6B; do
  timeout 170 python3 benchmarks/ab.py --model $m --batch 1 --rounds 3 --passes 1 main lat:latency_tiles=True > $OUT/ab_latency_$m.log 2>&1; echo "ab $m rc=$?"
  tail -3 $OUT/ab_latency_$m.log
done
timeout 150 python3 benchmarks/profile_decode.py --model Llama-3.2-1B --option latency_tiles=True --out /tmp/pl > /tmp/pl.log 2>&1; echo "profile rc=$?"
cp /tmp/pl/waterfall.md $OUT/waterfall_Llama-3.2-1B_lat.md; grep "decode step" /tmp/pl.log
