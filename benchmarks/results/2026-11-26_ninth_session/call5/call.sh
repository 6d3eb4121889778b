#!/bin/bash
# call 5 (2026-11-26, ninth session): GEMV tiles peeling their first step at batch > 1 (block 1's loads before the
# RMSNorm pass) against HEAD (8cce0e0) at batch 8, then megagen beside torch.compile and the PDL baseline at batch 8
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s9/trees
for m in Llama-3.2-1B Qwen3-0.6B; do
  timeout 150 python3 benchmarks/ab.py --model $m --batch 8 --rounds 3 --passes 1 head=$T/head final=$T/final > $OUT/ab_peel8_$m.log 2>&1; echo "ab $m b8 rc=$?"
  tail -4 $OUT/ab_peel8_$m.log; echo "t=$SECONDS"
done
left=$((590 - SECONDS))
timeout $left python3 -m megagen.bench --model Llama-3.2-1B Qwen3-0.6B --batch 8 --schedulers round_robin \
  --baselines ops_pdl_cuda_graph torch_compile_cuda_graph --out $OUT/bench_b8 > $OUT/bench_b8.log 2>&1; echo "bench rc=$?"
grep -A8 "^| system" $OUT/bench_b8/bench.md; echo "t=$SECONDS"
