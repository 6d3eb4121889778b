#!/bin/bash
# call 2 (2026-11-26, tenth session): GEMV tiles loading their first two weight blocks before the wait, against main
# (77aebb5): "two" only where a tile has two blocks (the o projection), "ahead2" wherever it has more than one
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s10/call2.sh $OUT/
T=scratch/s10/trees
for m in Qwen3-0.6B Llama-3.2-1B; do
  timeout 170 python3 benchmarks/ab.py --model $m --batch 1 --rounds 3 --passes 1 main=$T/main two=$T/two ahead2=$T/ahead2 > $OUT/ab_b1_$m.log 2>&1; echo "ab $m b1 rc=$?"
  tail -5 $OUT/ab_b1_$m.log; echo "t=$SECONDS"
done
for m in Llama-3.2-1B Qwen3-0.6B; do
  left=$((590 - SECONDS)); [ $left -gt 130 ] && left=130
  timeout $left python3 benchmarks/ab.py --model $m --batch 8 --rounds 3 --passes 1 main=$T/main ahead2=$T/ahead2 > $OUT/ab_b8_$m.log 2>&1; echo "ab $m b8 rc=$?"
  tail -4 $OUT/ab_b8_$m.log; echo "t=$SECONDS"
done
