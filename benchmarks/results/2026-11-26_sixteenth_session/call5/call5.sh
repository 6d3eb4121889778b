#!/bin/bash
# call 5 (2026-11-26, sixteenth session): the landing tree (branch combine-marks: main fc93b48 + marks in the
# attention combine, which compile to nothing without profiling): megagen bench, batch 1, greedy and sampling,
# beside torch.compile and the op-by-op PDL baseline; its GPU tests.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s16/call5.sh $OUT/
T=scratch/s16/trees/land
PYTHONPATH=$T timeout 400 python3 -m megagen.bench --model Qwen3-0.6B Llama-3.2-1B --batch 1 --schedulers round_robin \
  --baselines torch_compile_cuda_graph ops_pdl_cuda_graph --sample --out $OUT/bench > $OUT/bench.log 2>&1
echo "bench rc=$?"; rm -f $OUT/bench/bench.png
cat $OUT/bench/bench.md | head -30; echo "t=$SECONDS"
(cd $T && PYTHONPATH=$PWD timeout $((585 - SECONDS)) python3 -m pytest -q -n 8 -p no:cacheprovider \
  tests/test_profiler.py tests/test_models.py tests/test_staging.py > $OUT/pytest_gpu.log 2>&1); echo "pytest rc=$?"
tail -3 $OUT/pytest_gpu.log | cut -c1-300; echo "t=$SECONDS"
