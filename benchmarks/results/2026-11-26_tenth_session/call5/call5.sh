#!/bin/bash
# call 5 (2026-11-26, tenth session): main (77aebb5) against GEMV tiles asking L2 for their whole weight box before
# their wait (the fifth session's l2_prefetch_tiles.patch, measured then only at batch 8), at batch 1
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s10/call5.sh $OUT/
T=scratch/s10/trees
for m in Qwen3-0.6B Llama-3.2-1B; do
  timeout 200 python3 benchmarks/ab.py --model $m --batch 1 --rounds 3 --passes 1 main=$T/main "l2pf=$T/l2pf:l2_prefetch=True" > $OUT/ab_b1_$m.log 2>&1; echo "ab $m b1 rc=$?"
  tail -4 $OUT/ab_b1_$m.log; echo "t=$SECONDS"
done
R=$PWD
(cd $T/l2pfm && PYTHONPATH=$PWD timeout $((585 - SECONDS)) python3 $R/benchmarks/profile_decode.py --model Qwen3-0.6B --option l2_prefetch=True --out /tmp/pq > $OUT/profile_l2pf_Qwen3-0.6B.log 2>&1); echo "profile rc=$?"
cp /tmp/pq/profile.npz $OUT/profile_l2pf_Qwen3-0.6B.npz; cp /tmp/pq/waterfall.md $OUT/waterfall_l2pf_Qwen3-0.6B.md; echo "t=$SECONDS"
