#!/usr/bin/env bash
set -u
R=$OUT/r; mkdir -p $R
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
timeout 330 python3 -m scratch.ab Qwen3-0.6B main: comb2:combine_heads=2 fuse:fuse_mlp=True both:combine_heads=2,fuse_mlp=True 2>&1 | grep -v Warn | tee $R/qwen.log
timeout 240 python3 -m scratch.ab Llama-3.2-1B main: comb4:combine_heads=4 comb2:combine_heads=2 2>&1 | grep -v Warn | tee $R/llama.log
