#!/bin/bash
# Issue 14, session 28, call 3 (H100): tree warm = branch bench-warmup (main's kernels; megagen bench warms each
# system up for at least 10 steps and 1 s). megagen bench of Qwen3-0.6B and Llama-3.2-1B with the PDL and
# torch.compile baselines at the new default; then Qwen3-0.6B again with --warmup-seconds 0 (the old warm-up).
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s28/trees
B="--batch 1 --schedulers round_robin --baselines ops_pdl_cuda_graph torch_compile_cuda_graph"
PYTHONPATH=$T/warm timeout 200 python3 -m megagen.cli bench --model Qwen3-0.6B $B --out $OUT/bench_q > $OUT/bench_q.log 2>&1
echo "bench q rc=$? t=$SECONDS"; grep "^| " $OUT/bench_q/bench.md 2>/dev/null
PYTHONPATH=$T/warm timeout $((430 - SECONDS)) python3 -m megagen.cli bench --model Llama-3.2-1B $B --out $OUT/bench_l > $OUT/bench_l.log 2>&1
echo "bench l rc=$? t=$SECONDS"; grep "^| " $OUT/bench_l/bench.md 2>/dev/null
PYTHONPATH=$T/warm timeout $((585 - SECONDS)) python3 -m megagen.cli bench --model Qwen3-0.6B $B --warmup-seconds 0 --out $OUT/bench_q0 > $OUT/bench_q0.log 2>&1
echo "bench q0 rc=$? t=$SECONDS"; grep "^| " $OUT/bench_q0/bench.md 2>/dev/null
