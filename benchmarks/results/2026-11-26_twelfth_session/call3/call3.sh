#!/bin/bash
# call 3 (2026-11-26, twelfth session): the new sampler as committed (tree topk2: branch sampling-topk, the bitonic
# network on one hypercube shape): what sampling costs over greedy in megagen bench (issue 15), and the sampling
# tests on the GPU
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s12/call3.sh $OUT/
T=$PWD/scratch/s12/trees/topk2
PYTHONPATH=$T timeout 300 python3 -m megagen.bench --model Qwen3-0.6B Llama-3.2-1B --batch 1 --schedulers round_robin \
  --baselines --sample --out $OUT/bench_sample > $OUT/bench_sample.log 2>&1; echo "bench rc=$?"
rm -f $OUT/bench_sample/bench.png
grep -A6 "^| system" $OUT/bench_sample/bench.md; grep -i "sampl" $OUT/bench_sample/bench.md | head -5; echo "t=$SECONDS"
(cd $T && PYTHONPATH=$T timeout $((585 - SECONDS)) python3 -m pytest -q -x -n 8 tests/test_sampling.py > $OUT/pytest_sampling.log 2>&1; echo "pytest rc=$?"); tail -3 $OUT/pytest_sampling.log; echo "t=$SECONDS"
