#!/bin/bash
# call 7 (2026-11-27, eighteenth session): call 6 ran main (python -m put the repo root first on the path), and
# did not stall. The same command on branch tp-first-launch, run from its tree so that its megagen is imported.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache NVSHMEM_DISABLE_NVLS=1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || echo "wheel failed"
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s18/call7.sh $OUT/
(cd scratch/s18/trees/tpfix && PYTHONPATH=/tmp/site python3 -c "import megagen.runtime as r; print(r.__file__, hasattr(r.MegaKernel, \"_meet_ranks\"))")
cd scratch/s18/trees/tpfix && PYTHONPATH=/tmp/site timeout 570 torchrun --nproc-per-node 2 -m megagen.bench_tp --model Qwen3-8B \
  --new-tokens 32 --baselines torch_tp_cuda_graph --out $OUT/tp2 > $OUT/tp2.log 2>&1
echo "tp2 rc=$?"; grep -v "^W11\|warn\|checksum =\|Consider using" $OUT/tp2.log | grep -i "median_ms\|stopped\|error\|megagen/\|wrote" | head; echo "t=$SECONDS"
