#!/bin/bash
# megagen bench on the final tree (staged products a loop, records pipelined): Qwen3-0.6B and Llama-3.2-1B, batch 1,
# greedy and sampling, beside the op-by-op PDL baseline.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s20/call5.sh $OUT/
cd scratch/s20/trees/final
PYTHONPATH=$PWD timeout 560 python3 -m megagen.bench --model Qwen3-0.6B Llama-3.2-1B --batch 1 --schedulers round_robin \
  --baselines ops_pdl_cuda_graph --sample --out $OUT/bench > $OUT/bench.log 2>&1; echo "bench rc=$? t=$SECONDS"
cat $OUT/bench/bench.md
