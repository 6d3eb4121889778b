#!/bin/bash
# call 4 (2026-11-27, eighteenth session): main (d3cc4a7) at tp=2, Qwen3-8B, batch 1, context 512, beside torch TP +
# NCCL + CUDA graph in the same run (issue 14's fourth target: <= 2.6 ms on two H200). No tp=1 reference this time.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache NVSHMEM_DISABLE_NVLS=1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || echo "wheel failed"
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s18/call4.sh $OUT/
timeout 560 torchrun --nproc-per-node 2 -m megagen.bench_tp --model Qwen3-8B --new-tokens 32 \
  --baselines torch_tp_cuda_graph --out $OUT/tp2 > $OUT/tp2.log 2>&1
echo "tp2 rc=$?"; grep -v "^W11\|warn" $OUT/tp2.log | tail -25; echo "t=$SECONDS"; ls $OUT/tp2
