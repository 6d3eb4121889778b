#!/bin/bash
# call 1 (2026-11-26, eighth session): batch-1 GEMV loop pipelined through shared memory (gemv_stages)
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
for m in Qwen3-0.6B Llama-3.2-1B; do
  timeout 200 python3 benchmarks/ab.py --model $m --batch 1 --rounds 3 --passes 1 main s3:gemv_stages=3 s4:gemv_stages=4 > $OUT/ab_stages_$m.log 2>&1; echo "ab $m rc=$?"
  tail -4 $OUT/ab_stages_$m.log
done
timeout 150 python3 benchmarks/profile_decode.py --model Qwen3-0.6B --option gemv_stages=3 --out /tmp/pq > /tmp/pq.log 2>&1; echo "profile rc=$?"
cp /tmp/pq/waterfall.md $OUT/waterfall_Qwen3-0.6B_s3.md; grep "decode step" /tmp/pq.log
