#!/bin/bash
# call 2 (2026-11-26, thirteenth session): Qwen3-0.6B batch 1, greedy and sampling steps alternating in one process
# a tree: main (669407a); waits (main + one-rank builds wait and release at the kernel's scope + waits implied
# through ops of partial waits dropped: the pick waits for the sampling partials alone); new (waits + the
# partial's 32-bit network on 16-bit logits). Then a profile of new's sampling step.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s13/call2.sh $OUT/
T=scratch/s13/trees
timeout 330 python3 scratch/s13/ab.py --model Qwen3-0.6B --batch 1 --rounds 3 --passes 1 \
  g_main=$T/main:sample=False s_main=$T/main:sample=True g_waits=$T/waits:sample=False s_waits=$T/waits:sample=True \
  g_new=$T/new:sample=False s_new=$T/new:sample=True > $OUT/ab_qwen.log 2>&1; echo "ab rc=$?"
grep -i "rounds\||" $OUT/ab_qwen.log | tail -12; echo "t=$SECONDS"
PYTHONPATH=$T/new timeout $((590 - SECONDS)) python3 benchmarks/profile_decode.py --model Qwen3-0.6B --sample --out /tmp/pq > $OUT/profile_new_qwen_sample.log 2>&1; echo "profile rc=$?"
cp /tmp/pq/profile.npz $OUT/profile_new_qwen_sample.npz; head -16 $OUT/profile_new_qwen_sample.log; echo "t=$SECONDS"
