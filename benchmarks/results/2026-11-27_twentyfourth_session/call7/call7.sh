#!/bin/bash
# Issue 14, call 7: main 539a817 (the o projection merging), Qwen3-0.6B: 16 splits a KV head (default) against 8
# (32 keys a block, or 64), and the last split merging; one process.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s24/trees/land
timeout 220 python3 benchmarks/ab.py --model Qwen3-0.6B --rounds 3 --passes 1 on=$T s8=$T:max_attention_splits=8 \
  s8b64=$T:max_attention_splits=8,attention_block=64 off=$T:merge_in_o=False > $OUT/ab_q.log 2>> $OUT/err.log
echo "ab rc=$? t=$SECONDS"; tail -7 $OUT/ab_q.log
