#!/bin/bash
# call 3 (2026-11-26, eighth session): latency-aware batch-1 tiles, half-height blocks only for phases that do not
# split K (q/k/v, gate/up); and the library bound of each phase (phase_bounds.py)
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
for m in Llama-3.2-1B Qwen3-0.6B Qwen3-1.7B; do
  timeout 150 python3 benchmarks/ab.py --model $m --batch 1 --rounds 3 --passes 1 main lat:latency_tiles=True > $OUT/ab_latency2_$m.log 2>&1; echo "ab $m rc=$?"
  tail -3 $OUT/ab_latency2_$m.log
done
for m in Qwen3-0.6B Llama-3.2-1B; do
  timeout 60 python3 benchmarks/phase_bounds.py --model $m --out $OUT/phase_bounds_$m.md > /tmp/pb_$m.log 2>&1; echo "bounds $m rc=$?"; tail -12 /tmp/pb_$m.log
done
