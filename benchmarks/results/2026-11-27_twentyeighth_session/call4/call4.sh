#!/bin/bash
# Issue 14, session 28, call 4 (H100): tree warm = branch bench-warmup (main's kernels; megagen bench warms each
# system up for at least 10 steps and 1 s). Run from /tmp so that PYTHONPATH's tree, not the repository root's
# megagen, is imported (python -m puts the current directory first on sys.path). megagen bench of Qwen3-0.6B and
# Llama-3.2-1B with the PDL and torch.compile baselines, one process; then Qwen3-0.6B with --warmup-seconds 0.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
R=$PWD; T=$R/scratch/s28/trees/warm
B="--batch 1 --schedulers round_robin --baselines ops_pdl_cuda_graph torch_compile_cuda_graph"
cd /tmp
PYTHONPATH=$T python3 -c "import megagen, megagen.bench, megagen.models as m; print(megagen.__file__, m.__file__, 'warmup_s' in megagen.bench.measure.__code__.co_varnames)" | tee $OUT/which.txt
PYTHONPATH=$T timeout 400 python3 -m megagen.cli bench --model Qwen3-0.6B Llama-3.2-1B $B --out $OUT/bench > $OUT/bench.log 2>&1
echo "bench rc=$? t=$SECONDS"; grep "^| \|^## " $OUT/bench/bench.md 2>/dev/null
PYTHONPATH=$T timeout $((560 - SECONDS)) python3 -m megagen.cli bench --model Qwen3-0.6B $B --warmup-seconds 0 --out $OUT/bench_q0 > $OUT/bench_q0.log 2>&1
echo "bench q0 rc=$? t=$SECONDS"; grep "^| " $OUT/bench_q0/bench.md 2>/dev/null
