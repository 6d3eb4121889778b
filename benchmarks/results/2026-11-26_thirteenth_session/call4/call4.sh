#!/bin/bash
# call 4 (2026-11-26, thirteenth session): main at d762205 (waits implied through ops of partial waits dropped;
# one-rank builds wait and release at the kernel's scope): megagen bench, batch 1, greedy and sampling, beside the
# op-by-op PDL baseline
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s13/call4.sh $OUT/
git log --oneline -1 > $OUT/commit.txt 2>/dev/null
timeout 560 python3 -m megagen.bench --model Qwen3-0.6B Llama-3.2-1B --batch 1 --schedulers round_robin \
  --baselines ops_pdl_cuda_graph --sample --out $OUT/bench_sample > $OUT/bench_sample.log 2>&1; echo "bench rc=$?"
rm -f $OUT/bench_sample/bench.png
cat $OUT/bench_sample/bench.md | head -40; echo "t=$SECONDS"
