#!/usr/bin/env bash
# Issue 16 on one H200: Qwen3-30B-A3B (all 48 layers), then Mixtral-8x7B-v0.1, random bf16 weights: logits and
# 128 generated tokens against HuggingFace bf16, megagen's step against HF eager and HF static cache + CUDA graph.
set -u
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
mkdir -p $OUT/logs
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > $OUT/logs/gpu.txt
pack() { (cd $OUT && tar czf all.tgz logs moe* 2>/dev/null); }
timeout 330 python3 benchmarks/decode_check.py --presets Qwen3-30B-A3B --new-tokens 128 --steps 50 --out $OUT/moe_qwen3_30b_a3b.json > $OUT/logs/moe_q.log 2>&1; echo "moe_q rc=$?" | tee -a $OUT/logs/summary.txt
pack
timeout 200 python3 benchmarks/decode_check.py --presets Mixtral-8x7B-v0.1 --new-tokens 128 --steps 50 --out $OUT/moe_mixtral.json > $OUT/logs/moe_m.log 2>&1; echo "moe_m rc=$?" | tee -a $OUT/logs/summary.txt
pack
tail -5 $OUT/logs/moe_q.log $OUT/logs/moe_m.log
