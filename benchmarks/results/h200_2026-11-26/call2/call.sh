#!/bin/bash
# call 2 (2026-11-26): GEMV blocks of 32 x 256 against 16 x 512 (the row-block boundary cost), and Qwen3-8B at batch 1
# beside torch.compile + CUDA graph and the PDL baseline
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
for m in Qwen3-0.6B Llama-3.2-1B; do
  timeout 130 python3 benchmarks/ab.py --model $m --batch 1 --rounds 3 --passes 1 main b32x256:block_n=32,block_k=256 > $OUT/ab_blocks_$m.log 2>&1; echo "ab $m rc=$?"
  tail -4 $OUT/ab_blocks_$m.log
done
timeout 250 python3 -m megagen.bench --model Qwen3-8B --batch 1 --schedulers round_robin --baselines torch_compile_cuda_graph ops_pdl_cuda_graph --out /tmp/b1_qwen3_8b > $OUT/bench_b1_qwen3_8b.log 2>&1; echo "bench rc=$?"
cp /tmp/b1_qwen3_8b/bench.json $OUT/bench_b1_qwen3_8b.json 2>/dev/null; grep -A6 "^| system" /tmp/b1_qwen3_8b/bench.md
