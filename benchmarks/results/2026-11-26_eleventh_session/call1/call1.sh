#!/bin/bash
# call 1 (2026-11-26, eleventh session): the sampling step of main (3ddc804) against branch sampling-registers
# (d3445c6: the pick with fewer registers), and profiles of Qwen3-0.6B and Llama-3.2-1B with the attention marks
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s11/call1.sh $OUT/
T=scratch/s11/trees
for m in Qwen3-0.6B Llama-3.2-1B; do
  timeout 170 python3 benchmarks/ab.py --model $m --batch 1 --rounds 3 --passes 1 --sample head=$T/head samp=$T/samp > $OUT/ab_sample_$m.log 2>&1; echo "ab $m rc=$?"
  tail -4 $OUT/ab_sample_$m.log; echo "t=$SECONDS"
done
for m in Qwen3-0.6B Llama-3.2-1B; do
  timeout $((590 - SECONDS)) python3 benchmarks/profile_decode.py --model $m --out /tmp/p_$m > $OUT/profile_$m.log 2>&1; echo "profile $m rc=$?"
  cp /tmp/p_$m/profile.npz $OUT/profile_$m.npz; cp /tmp/p_$m/waterfall.md $OUT/waterfall_$m.md; tail -12 /tmp/p_$m/waterfall.md; echo "t=$SECONDS"
done
