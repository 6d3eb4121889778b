#!/bin/bash
# call 9 (2026-11-26, fourteenth session): main at 476170f on an H200: megagen bench, batch 1, beside torch.compile
# and the op-by-op PDL baseline
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s14/call9.sh $OUT/
timeout 500 python3 -m megagen.bench --model Qwen3-0.6B Llama-3.2-1B --batch 1 --schedulers round_robin \
  --baselines torch_compile_cuda_graph ops_pdl_cuda_graph --out $OUT/bench > $OUT/bench.log 2>&1
echo "bench rc=$?"; rm -f $OUT/bench/bench.png
grep "^|\|^## " $OUT/bench/bench.md | head -20; echo "t=$SECONDS"
