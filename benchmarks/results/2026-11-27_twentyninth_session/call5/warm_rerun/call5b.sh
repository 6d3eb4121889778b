#!/bin/bash
# Session 29, call 5 (H100): main (36c0cef) in megagen bench beside torch.compile + CUDA graph and the PDL baseline,
# the H100 rows call 2 did not run: Qwen3-1.7B at batch 1, then batch 8 of Llama-3.2-1B, Qwen3-0.6B, Qwen3-1.7B and
# Qwen3-8B as time allows (issue 14's second and third targets). One bench process a row.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
for row in Qwen3-0.6B:8 Qwen3-1.7B:8 Qwen3-8B:8; do
  m=${row%:*}; b=${row#*:}
  left=$((585 - SECONDS)); [ $left -lt 110 ] && { echo "skip $row: $left s left"; continue; }
  timeout $left python3 -m megagen.bench --model $m --batch $b --schedulers round_robin \
    --baselines ops_pdl_cuda_graph torch_compile_cuda_graph --out $OUT/b${b}_$m > $OUT/b${b}_$m.log 2>&1; echo "bench $row rc=$? t=$SECONDS"
  grep -A5 "^| system" $OUT/b${b}_$m/bench.md
done
rm -f $OUT/b*/bench.png
(cd $OUT && tar czf rows2.tgz b1_* b8_* && rm -rf b1_* b8_*)
