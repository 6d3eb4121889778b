#!/bin/bash
# A/B, Qwen3-0.6B batch 1: staged products kept a loop (roll2), the record chain pipelined (ahead), both; main twice
# (first and last: the drift between processes); then the sampling step, main against both.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s20/call3.sh $OUT/
T=scratch/s20/trees
timeout 400 python3 benchmarks/ab.py --model Qwen3-0.6B --batch 1 --rounds 3 --passes 1 main=$T/main roll2=$T/roll2 \
  ahead=$T/ahead both=$T/both main2=$T/main2 > $OUT/ab_qwen.log 2>&1; echo "ab qwen rc=$? t=$SECONDS"; grep "|" $OUT/ab_qwen.log
timeout $((575 - SECONDS)) python3 benchmarks/ab.py --model Qwen3-0.6B --batch 1 --rounds 3 --passes 1 --sample \
  s_main=$T/main s_both=$T/both > $OUT/ab_qwen_sample.log 2>&1; echo "ab sample rc=$? t=$SECONDS"; grep "|" $OUT/ab_qwen_sample.log
