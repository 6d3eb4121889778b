#!/bin/bash
# call 6 (2026-11-27, seventeenth session): main (c4e30e7) on an H200: megagen beside torch.compile + CUDA graph and
# the PDL baseline, Qwen3-8B, batch 1 then batch 8 (issue 14's H200 rows)
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s17/call6.sh $OUT/
for b in 1 8; do
  left=$((585 - SECONDS))
  timeout $left python3 -m megagen.bench --model Qwen3-8B --batch $b --schedulers round_robin \
    --baselines ops_pdl_cuda_graph torch_compile_cuda_graph --out $OUT/bench_b$b > $OUT/bench_b$b.log 2>&1; echo "bench b$b rc=$?"
  grep -A6 "^| system" $OUT/bench_b$b/bench.md; echo "t=$SECONDS"
done
rm -f $OUT/bench_b*/bench.png
