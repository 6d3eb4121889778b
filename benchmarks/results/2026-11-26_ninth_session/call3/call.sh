#!/bin/bash
# call 3 (2026-11-26, ninth session): the attention's loads hoisted (tables in the heads' shape where there are no
# split-K partial sums; the loop as before) against main at batch 1 and 8, then its Qwen3-0.6B profile
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s9/trees
for mb in "Qwen3-0.6B 1" "Llama-3.2-1B 8"; do
  set -- $mb
  timeout 170 python3 benchmarks/ab.py --model $1 --batch $2 --rounds 3 --passes 1 main=$T/main final=$T/final > $OUT/ab_final_$1_b$2.log 2>&1; echo "ab $1 b$2 rc=$?"
  tail -4 $OUT/ab_final_$1_b$2.log; echo "t=$SECONDS"
done
left=$((590 - SECONDS))
timeout $left python3 benchmarks/profile_decode.py --model Qwen3-0.6B --out /tmp/pq > /tmp/pq.log 2>&1; echo "profile rc=$?"
cp /tmp/pq/waterfall.md $OUT/waterfall_Qwen3-0.6B_final.md; grep "decode step" /tmp/pq.log; echo "t=$SECONDS"
left=$((590 - SECONDS))
R=$PWD; cd $T/main && PYTHONPATH=$PWD timeout $left python3 $R/benchmarks/profile_decode.py --model Qwen3-0.6B --out /tmp/pm > /tmp/pm.log 2>&1; echo "profile main rc=$?"
cp /tmp/pm/waterfall.md $OUT/waterfall_Qwen3-0.6B_main.md; grep "decode step" /tmp/pm.log; echo "t=$SECONDS"
