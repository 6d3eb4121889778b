#!/bin/bash
# Issue 16, session 29, call 3 (H100): the whole Qwen3-30B-A3B (61 GB in bf16) in megagen bench at batch 1, beside
# HuggingFace static cache + CUDA graph and the PDL baseline (process 1), then torch.compile + CUDA graph (process 2).
# Tree moe = branch moe-bench (main plus: a baseline the model cannot run is reported in bench.json's skipped).
# Run from /tmp so that python -m imports the tree's megagen, not the repository root's.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $OUT/gpu.txt
R=$PWD; T=$R/scratch/s29/trees/moe
(cd /tmp && PYTHONPATH=$T python3 -c "import megagen; print(megagen.__file__)") | tee $OUT/which.txt
(cd /tmp && PYTHONPATH=$T timeout 300 python3 -m megagen.bench --model Qwen3-30B-A3B --batch 1 --schedulers round_robin \
  --baselines hf_static_cuda_graph ops_pdl_cuda_graph --out $OUT/bench_hf > $OUT/bench_hf.log 2>&1); echo "bench hf rc=$? t=$SECONDS"
grep -B3 -A6 "^| system" $OUT/bench_hf/bench.md
(cd /tmp && PYTHONPATH=$T timeout $((580 - SECONDS)) python3 -m megagen.bench --model Qwen3-30B-A3B --batch 1 --schedulers round_robin \
  --baselines torch_compile_cuda_graph --out $OUT/bench_tc > $OUT/bench_tc.log 2>&1); echo "bench tc rc=$? t=$SECONDS"
grep -A6 "^| system" $OUT/bench_tc/bench.md
rm -f $OUT/bench_*/bench.png
