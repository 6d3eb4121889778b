#!/bin/bash
# The follow scheduler against round robin, Qwen3-0.6B batch 1, one process (main e128499).
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
timeout 150 python3 benchmarks/ab.py --model Qwen3-0.6B --rounds 3 --passes 1 rr:scheduler=round_robin \
  follow:scheduler=follow > $OUT/ab_follow.log 2> $OUT/ab_follow.err; echo "ab rc=$? t=$SECONDS"
tail -5 $OUT/ab_follow.log
