#!/bin/bash
# Issue 14, call 2: L2 prefetch ops (tree l2p, off by default) in one process per model:
# off / place 1 (before the attention, CTAs without an attention tile) / place 2 (after it, one tile a CTA) / budgets.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s24/trees/l2p
cp scratch/s24/waterfall_l2p.py benchmarks/waterfall.py
timeout 220 python3 benchmarks/ab.py --model Qwen3-0.6B --rounds 3 --passes 1 off=$T p1=$T:l2_prefetch=True \
  p2=$T:l2_prefetch=True,l2_prefetch_place=2 p1_12=$T:l2_prefetch=True,l2_prefetch_mb=12 > $OUT/ab_q.log 2>> $OUT/ab.err
echo "ab q rc=$? t=$SECONDS"; tail -6 $OUT/ab_q.log
timeout 200 python3 benchmarks/ab.py --model Llama-3.2-1B --rounds 3 --passes 1 off=$T p1=$T:l2_prefetch=True \
  p1_40=$T:l2_prefetch=True,l2_prefetch_mb=40 > $OUT/ab_l.log 2>> $OUT/ab.err
echo "ab l rc=$? t=$SECONDS"; tail -5 $OUT/ab_l.log
PYTHONPATH=$T timeout $((590 - SECONDS)) python3 benchmarks/profile_decode.py --model Qwen3-0.6B --option l2_prefetch=True --out /tmp/pp > $OUT/profile_p1.log 2>&1
echo "profile rc=$? t=$SECONDS"; cp /tmp/pp/profile.npz $OUT/profile_p1.npz
grep -A12 "^| phase | tiles | MB" $OUT/profile_p1.log | head -14
