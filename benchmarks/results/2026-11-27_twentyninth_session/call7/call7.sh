#!/bin/bash
# Session 29, call 7 (H100): where a Qwen3-30B-A3B layer goes on main (36c0cef): its first 8 layers at real shapes,
# profiled (benchmarks/profile_decode.py), the waterfall beside it (issue 16's next step).
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s29/call7.sh $OUT/
timeout 400 python3 benchmarks/profile_decode.py --model Qwen3-30B-A3B --layers 8 --out /tmp/p_moe > $OUT/profile_moe.log 2>&1; echo "moe rc=$? t=$SECONDS"
cp /tmp/p_moe/waterfall.md $OUT/waterfall_moe.md; cp /tmp/p_moe/*.npz $OUT/ 2>/dev/null; ls /tmp/p_moe; head -5 $OUT/waterfall_moe.md
