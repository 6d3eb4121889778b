#!/bin/bash
# call 4 (2026-11-26, ninth session): GEMV tiles issuing block 1's loads before the RMSNorm pass (the first step
# peeled) against HEAD (8cce0e0), batch 1 and 8
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s9/trees
for mb in "Qwen3-0.6B 1" "Llama-3.2-1B 1" "Llama-3.2-1B 8"; do
  set -- $mb
  timeout 170 python3 benchmarks/ab.py --model $1 --batch $2 --rounds 3 --passes 1 head=$T/head peel=$T/peel > $OUT/ab_peel_$1_b$2.log 2>&1; echo "ab $1 b$2 rc=$?"
  tail -4 $OUT/ab_peel_$1_b$2.log; echo "t=$SECONDS"
done
left=$((590 - SECONDS))
R=$PWD; cd $T/peel && PYTHONPATH=$PWD timeout $left python3 $R/benchmarks/profile_decode.py --model Qwen3-0.6B --out /tmp/pp > /tmp/pp.log 2>&1; echo "profile rc=$?"
cp /tmp/pp/waterfall.md $OUT/waterfall_Qwen3-0.6B_peel.md; grep "decode step" /tmp/pp.log; echo "t=$SECONDS"
