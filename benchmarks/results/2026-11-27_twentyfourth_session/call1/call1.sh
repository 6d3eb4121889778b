#!/bin/bash
# Issue 14, call 1: main (c16b783) against load-polls (355e23b): ab.py Qwen3-0.6B and Llama-3.2-1B;
# profile_decode.py Qwen3-0.6B on both (waterfalls; main's profile.npz kept).
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s24/trees
for m in Qwen3-0.6B Llama-3.2-1B; do
  timeout 150 python3 benchmarks/ab.py --model $m --rounds 3 --passes 1 main=$T/main lp=$T/lp > $OUT/ab_$m.log 2>> $OUT/ab.err
  echo "ab $m rc=$? t=$SECONDS"; tail -3 $OUT/ab_$m.log
done
PYTHONPATH=$T/main timeout 140 python3 benchmarks/profile_decode.py --model Qwen3-0.6B --out /tmp/pm > $OUT/profile_main.log 2>&1
echo "profile main rc=$? t=$SECONDS"; cp /tmp/pm/profile.npz $OUT/profile_main.npz
PYTHONPATH=$T/lp timeout $((585 - SECONDS)) python3 benchmarks/profile_decode.py --model Qwen3-0.6B --out /tmp/pl > $OUT/profile_lp.log 2>&1
echo "profile lp rc=$? t=$SECONDS"
grep -A12 "^| phase | tiles | MB" $OUT/profile_main.log $OUT/profile_lp.log
