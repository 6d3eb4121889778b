#!/bin/bash
# call 1 (2026-11-26): where main's batch-1 step goes now, and the fused MLP option on the current tree
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
for m in Qwen3-0.6B Llama-3.2-1B; do
  timeout 170 python3 benchmarks/profile_decode.py --model $m --out /tmp/p_$m > /tmp/p_$m.log 2>&1; echo "profile $m rc=$?"
  cp /tmp/p_$m/waterfall.md $OUT/waterfall_$m.md; cp /tmp/p_$m/profile.npz $OUT/profile_$m.npz
  grep "decode step" /tmp/p_$m.log
done
timeout 200 python3 benchmarks/ab.py --model Qwen3-0.6B --batch 1 --rounds 3 --passes 1 two_phase fused:fuse_mlp=True > $OUT/ab_fused.log 2>&1; echo "ab rc=$?"
tail -5 $OUT/ab_fused.log
