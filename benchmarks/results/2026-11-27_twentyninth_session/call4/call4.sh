#!/bin/bash
# Session 29, call 4 (asked for nvidia-h200; on an H100 it stops at once): the H200 targets of issues 14 and 16.
# megagen bench at batch 1 of the whole Qwen3-30B-A3B beside HuggingFace static cache + CUDA graph and torch.compile + CUDA graph (issue
# 16: >= 60% of the floor), then Qwen3-8B beside torch.compile + CUDA graph and the PDL baseline (issue 14: <= 4.3 ms). Tree moe = branch moe-bench (main's kernels; a baseline that cannot run is reported).
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $OUT/gpu.txt
grep -q H200 $OUT/gpu.txt || { echo "not an H200: stopping"; exit 0; }
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
R=$PWD; T=$R/scratch/s29/trees/moe
(cd /tmp && PYTHONPATH=$T timeout 420 python3 -m megagen.bench --model Qwen3-30B-A3B --batch 1 --schedulers round_robin \
  --baselines hf_static_cuda_graph torch_compile_cuda_graph --out $OUT/bench_moe > $OUT/bench_moe.log 2>&1); echo "bench moe rc=$? t=$SECONDS"
grep -B3 -A6 "^| system" $OUT/bench_moe/bench.md
(cd /tmp && PYTHONPATH=$T timeout $((585 - SECONDS)) python3 -m megagen.bench --model Qwen3-8B --batch 1 --schedulers round_robin \
  --baselines ops_pdl_cuda_graph torch_compile_cuda_graph --out $OUT/bench_8b > $OUT/bench_8b.log 2>&1); echo "bench 8b rc=$? t=$SECONDS"
grep -B3 -A6 "^| system" $OUT/bench_8b/bench.md
rm -f $OUT/bench_*/bench.png
