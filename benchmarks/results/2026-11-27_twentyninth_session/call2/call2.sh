#!/bin/bash
# Issue 14, session 29, call 2 (H200): main (36c0cef) beside torch.compile + CUDA graph and the PDL baseline at
# batch 1: Qwen3-8B (target <= 4.3 ms), then Llama-3.2-1B and Qwen3-0.6B as time allows. One bench process a model.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
for m in Qwen3-8B Llama-3.2-1B Qwen3-0.6B; do
  left=$((585 - SECONDS)); [ $left -lt 120 ] && { echo "skip $m: $left s left"; continue; }
  timeout $left python3 -m megagen.bench --model $m --batch 1 --schedulers round_robin \
    --baselines ops_pdl_cuda_graph torch_compile_cuda_graph --out $OUT/bench_$m > $OUT/bench_$m.log 2>&1; echo "bench $m rc=$?"
  grep -A5 "^| system" $OUT/bench_$m/bench.md; echo "t=$SECONDS"
done
rm -f $OUT/bench_*/bench.png
