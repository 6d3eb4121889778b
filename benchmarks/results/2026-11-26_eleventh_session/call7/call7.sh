#!/bin/bash
# call 7 (2026-11-26, eleventh session): main at 3a1ae21 beside the baselines, batch 1 (Qwen3-0.6B, Llama-3.2-1B,
# then Qwen3-1.7B as time allows)
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s11/call7.sh $OUT/
timeout 300 python3 -m megagen.bench --model Qwen3-0.6B Llama-3.2-1B --batch 1 --schedulers round_robin \
  --baselines ops_pdl_cuda_graph torch_compile_cuda_graph --out $OUT/bench_b1 > $OUT/bench_b1.log 2>&1; echo "bench rc=$?"
rm -f $OUT/bench_b1/bench.png; grep -A6 "^| system" $OUT/bench_b1/bench.md; echo "t=$SECONDS"
timeout $((440 - SECONDS)) python3 -m megagen.bench --model Qwen3-1.7B --batch 1 --schedulers round_robin \
  --baselines ops_pdl_cuda_graph torch_compile_cuda_graph --out $OUT/bench_b1_17 > $OUT/bench_b1_17.log 2>&1; echo "bench 1.7B rc=$?"
rm -f $OUT/bench_b1_17/bench.png; grep -A6 "^| system" $OUT/bench_b1_17/bench.md; echo "t=$SECONDS"
