#!/bin/bash
# call 5 (2026-11-26, fourteenth session): main at a1d6ae4 (staged), Qwen3-0.6B batch 1 greedy: the default tiles
# against tiles of at most 16 rows (max_tile_rows=16: every GEMV phase of one wave or more, boxes half as large)
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s14/call5.sh $OUT/
timeout 300 python3 benchmarks/ab.py --model Qwen3-0.6B --batch 1 --rounds 3 --passes 1 main t16:max_tile_rows=16 \
  > $OUT/ab_qwen_t16.log 2>&1; echo "ab rc=$?"; grep -i "rounds\||" $OUT/ab_qwen_t16.log | tail -6; echo "t=$SECONDS"
