#!/bin/bash
# call 8 (2026-11-26, fourteenth session): main at b2e6cf7 (staged), Qwen3-0.6B batch 1 greedy under the three
# schedulers: round_robin (default), zigzag, work_queue (a CTA fetches its next task, and stages its weights, as
# soon as it is free)
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s14/call8.sh $OUT/
timeout 400 python3 benchmarks/ab.py --model Qwen3-0.6B --batch 1 --rounds 3 --passes 1 main zz:scheduler=zigzag \
  wq:scheduler=work_queue > $OUT/ab_qwen_sched.log 2>&1; echo "ab rc=$?"; grep -i "rounds\||" $OUT/ab_qwen_sched.log | tail -8
echo "t=$SECONDS"
