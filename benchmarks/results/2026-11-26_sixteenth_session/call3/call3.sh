#!/bin/bash
# call 3 (2026-11-26, sixteenth session): branch combine-marks (main + marks in the attention combine): Qwen3-0.6B
# profiles of the greedy and the sampling step; the branch's GPU tests.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s16/call3.sh $OUT/
T=scratch/s16/trees/marks
PYTHONPATH=$T timeout 170 python3 benchmarks/profile_decode.py --model Qwen3-0.6B --out /tmp/pg \
  > $OUT/profile_Qwen3-0.6B.log 2>&1; echo "profile rc=$?"; cp /tmp/pg/profile.npz $OUT/profile_Qwen3-0.6B.npz
head -4 $OUT/profile_Qwen3-0.6B.log | tail -2; echo "t=$SECONDS"
PYTHONPATH=$T timeout 180 python3 benchmarks/profile_decode.py --model Qwen3-0.6B --sample --out /tmp/ps \
  > $OUT/profile_Qwen3-0.6B_sample.log 2>&1; echo "profile rc=$?"; cp /tmp/ps/profile.npz $OUT/profile_Qwen3-0.6B_sample.npz
head -4 $OUT/profile_Qwen3-0.6B_sample.log | tail -2; echo "t=$SECONDS"
(cd $T && PYTHONPATH=$PWD timeout $((585 - SECONDS)) python3 -m pytest -q -n 8 -p no:cacheprovider \
  tests/test_profiler.py tests/test_staging.py tests/test_models.py > $OUT/pytest_gpu.log 2>&1); echo "pytest rc=$?"
tail -3 $OUT/pytest_gpu.log | cut -c1-300; echo "t=$SECONDS"
