#!/bin/bash
# Issue 14, session 29, call 1 (H100): q/k/v tiles that fill the CTAs. Tree fill = branch qkv-fill (main plus an
# experimental build option qkv_tiles="ROWSxBLOCK_NxBLOCK_K"). ab.py, one process a model: main's tiling against
# Llama-3.2-1B 12 rows in 4 x 2048 blocks (256 tiles, 3 steps) and 16 rows in 8 x 1024 (192 tiles, the block
# shape alone); Qwen3-0.6B 16 rows in 16 x 512 (256 staged tiles of 32 KB).
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s29/trees
timeout 330 python3 benchmarks/ab.py --model Llama-3.2-1B --rounds 3 --passes 1 main=$T/fill fill12=$T/fill:qkv_tiles=12x4x2048 shape16=$T/fill:qkv_tiles=16x8x1024 > $OUT/ab_l.log 2>> $OUT/err.log
echo "ab l rc=$? t=$SECONDS"; tail -4 $OUT/ab_l.log
timeout $((560 - SECONDS)) python3 benchmarks/ab.py --model Qwen3-0.6B --rounds 3 --passes 1 main=$T/fill fill16=$T/fill:qkv_tiles=16x16x512 > $OUT/ab_q.log 2>> $OUT/err.log
echo "ab q rc=$? t=$SECONDS"; tail -3 $OUT/ab_q.log
