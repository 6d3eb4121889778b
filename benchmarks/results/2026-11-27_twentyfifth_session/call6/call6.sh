#!/bin/bash
# Issue 14, session 25, call 6 (H100): tree fin (branch paired-mlp a5e2ebc): the o projection merging the splits
# against the last split merging them, in one process, now that gate/up is wide; then megagen bench of Qwen3-0.6B and
# Llama-3.2-1B with the PDL and torch.compile baselines and sampling.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s25/trees
timeout 120 python3 benchmarks/ab.py --model Qwen3-0.6B --rounds 3 --passes 1 fin=$T/fin ticket=$T/fin:merge_in_o=False > $OUT/ab_q.log 2>> $OUT/err.log
echo "ab q rc=$? t=$SECONDS"; tail -4 $OUT/ab_q.log
PYTHONPATH=$T/fin timeout $((590 - SECONDS)) python3 -m megagen.cli bench --model Qwen3-0.6B Llama-3.2-1B --batch 1 --schedulers round_robin --baselines ops_pdl_cuda_graph torch_compile_cuda_graph --sample --out $OUT/bench > $OUT/bench.log 2>&1
echo "bench rc=$? t=$SECONDS"; cat $OUT/bench/bench.md | head -30
