#!/usr/bin/env bash
# Where a Qwen3-30B-A3B (first 8 layers, real shapes) decode step goes: profile and waterfall, batch 1.
set -u
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
mkdir -p $OUT/logs
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/logs/gpu.txt
cd benchmarks && timeout 300 python3 profile_decode.py --model Qwen3-30B-A3B --layers 8 --out $OUT/p_moe > $OUT/logs/p_moe.log 2>&1; echo "rc=$?"
cd $OUT && tar czf all.tgz logs p_moe
cat $OUT/p_moe/waterfall.md
