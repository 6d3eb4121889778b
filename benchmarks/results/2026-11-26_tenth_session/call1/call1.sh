#!/bin/bash
# call 1 (2026-11-26, tenth session): main (77aebb5) on an H200: megagen beside torch.compile and the PDL baseline,
# Llama-3.2-1B and Qwen3-0.6B, batch 1 then batch 8
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s10/call1.sh $OUT/
for b in 1 8; do
  left=$((585 - SECONDS))
  timeout $left python3 -m megagen.bench --model Llama-3.2-1B Qwen3-0.6B --batch $b --schedulers round_robin \
    --baselines ops_pdl_cuda_graph torch_compile_cuda_graph --out $OUT/bench_b$b > $OUT/bench_b$b.log 2>&1; echo "bench b$b rc=$?"
  grep -A6 "^| system" $OUT/bench_b$b/bench.md; echo "t=$SECONDS"
done
