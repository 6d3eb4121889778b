#!/bin/bash
# Issue 14: main (32144a6) against the abort flag read every 32 polls (abort), Qwen3-1.7B.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s23/trees
timeout 160 python3 benchmarks/ab.py --model Qwen3-1.7B --rounds 3 --passes 1 main=$T/main abort=$T/abort > $OUT/ab_Qwen3-1.7B.log 2>> $OUT/ab.err
echo "ab rc=$? t=$SECONDS"; tail -3 $OUT/ab_Qwen3-1.7B.log
