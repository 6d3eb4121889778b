#!/bin/bash
# call 3 (2026-11-26): batch-1 GEMV blocks 16x512 (main) / 32x256 / 64x128, and a profile with 32x256
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
for m in Qwen3-0.6B Llama-3.2-1B; do
  timeout 170 python3 benchmarks/ab.py --model $m --batch 1 --rounds 3 --passes 1 main b32x256:block_n=32,block_k=256 b64x128:block_n=64,block_k=128 > $OUT/ab_blocks3_$m.log 2>&1; echo "ab $m rc=$?"
  tail -5 $OUT/ab_blocks3_$m.log
done
timeout 150 python3 benchmarks/profile_decode.py --model Qwen3-0.6B --option block_n=32 --option block_k=256 --out /tmp/pq > /tmp/pq.log 2>&1; echo "profile rc=$?"
cp /tmp/pq/waterfall.md $OUT/waterfall_Qwen3-0.6B_b32x256.md; cp /tmp/pq/profile.npz $OUT/profile_Qwen3-0.6B_b32x256.npz; grep "decode step" /tmp/pq.log
