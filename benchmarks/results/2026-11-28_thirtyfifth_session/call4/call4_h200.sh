#!/bin/bash
# Session 35, call 4 (nvidia-h200, carry ["scratch/s36"], the last 303 s of device time): the sampler's fourth form
# (one loop of one gather pass: the fast path is its first pass, a bisected threshold the rare rest; no settle task)
# against main. ptxas (sm_90a, Qwen3-0.6B one layer): driver 225 registers, 13/13 spill instructions (main 227,
# 8/4; call 2's nospill 0/0). Predicted: sampling's cost +66 us (main) -> +30 to +40 us.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s36/call4_h200.sh $OUT/
M=$PWD/scratch/s36/trees/main
timeout 190 python3 benchmarks/ab.py --model Qwen3-0.6B --rounds 3 --passes 1 main_g=$M:sample=False \
  main_s=$M:sample=True new_g:sample=False new_s:sample=True > $OUT/ab_Qwen3-0.6B.log 2> $OUT/ab_Qwen3-0.6B.err
echo "ab rc=$? t=$SECONDS"; cat $OUT/ab_Qwen3-0.6B.log; tail -2 $OUT/ab_Qwen3-0.6B.err
