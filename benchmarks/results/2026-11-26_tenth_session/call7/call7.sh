#!/bin/bash
# call 7 (2026-11-26, tenth session): the tree with tile marks (e1ed60f): the profiler tests on the GPU, a profile of
# Qwen3-0.6B (its waterfall splits each GEMV tile's run at the marks), decode_check of Qwen3-0.6B
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s10/call7.sh $OUT/
timeout 150 python3 -m pytest tests/test_profiler.py -q -n 8 > $OUT/pytest_profiler.log 2>&1; echo "pytest rc=$?"; tail -2 $OUT/pytest_profiler.log; echo "t=$SECONDS"
timeout 200 python3 benchmarks/profile_decode.py --model Qwen3-0.6B --out /tmp/pq > $OUT/profile_Qwen3-0.6B.log 2>&1; echo "profile rc=$?"
cp /tmp/pq/profile.npz $OUT/profile_Qwen3-0.6B.npz; cp /tmp/pq/waterfall.md $OUT/waterfall_Qwen3-0.6B.md; tail -10 /tmp/pq/waterfall.md; echo "t=$SECONDS"
timeout $((585 - SECONDS)) python3 benchmarks/decode_check.py --presets Qwen3-0.6B --new-tokens 32 --steps 20 --skip-hf > $OUT/decode_check.log 2>&1; echo "decode_check rc=$?"; tail -6 $OUT/decode_check.log; echo "t=$SECONDS"
