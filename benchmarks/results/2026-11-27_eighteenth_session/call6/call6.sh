#!/bin/bash
# call 6 (2026-11-27, eighteenth session): branch tp-first-launch (every rank compiles, then the ranks meet, before a
# kernel's first launch) on the call-4 command that stalled on main: Qwen3-8B at tp=2, context 512, beside torch TP +
# NCCL + CUDA graph in the same run.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache NVSHMEM_DISABLE_NVLS=1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || echo "wheel failed"
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s18/call6.sh $OUT/
PYTHONPATH=/tmp/site:scratch/s18/trees/tpfix python3 -c "import megagen.runtime as r; print(r.__file__, hasattr(r.MegaKernel, \"_meet_ranks\"))"
PYTHONPATH=/tmp/site:scratch/s18/trees/tpfix timeout 570 torchrun --nproc-per-node 2 -m megagen.bench_tp --model Qwen3-8B \
  --new-tokens 32 --baselines torch_tp_cuda_graph --out $OUT/tp2 > $OUT/tp2.log 2>&1
echo "tp2 rc=$?"; grep -v "^W11\|warn\|checksum =\|Consider using" $OUT/tp2.log | grep -i "median_ms\|stopped\|error\|megagen/\|wrote" | head; echo "t=$SECONDS"
