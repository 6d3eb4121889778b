#!/bin/bash
# Issue 14, session 25, call 7 (H100): land = main 8132c74 (paired-mlp merged); fo = land + the o tiles merging in
# registers (c29fa00). ab.py Qwen3-0.6B land against fo; a profile of fo (does its o input get faster?).
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s25/trees
timeout 130 python3 benchmarks/ab.py --model Qwen3-0.6B --rounds 3 --passes 1 land=$T/land fo=$T/fo > $OUT/ab_q.log 2>> $OUT/err.log
echo "ab q rc=$? t=$SECONDS"; tail -4 $OUT/ab_q.log
PYTHONPATH=$T/fo timeout 150 python3 benchmarks/profile_decode.py --model Qwen3-0.6B --out /tmp/pfo > $OUT/profile_fo.log 2>&1
echo "profile rc=$? t=$SECONDS"; grep -A7 "^| phase | tiles | MB" $OUT/profile_fo.log | head -8; grep -A7 "^| phase | wait" $OUT/profile_fo.log
