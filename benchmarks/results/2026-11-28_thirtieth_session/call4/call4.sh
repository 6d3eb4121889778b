#!/bin/bash
# Session 30, call 4 (H100, warm after call 3): the revised early routing's correctness on the GPU: decode_check on
# Qwen3-30B-A3B's first 4 layers (bf16 logits against HuggingFace's), then tests/test_moe.py (the branch's) on the GPU.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
cp scratch/s30/call4.sh $OUT/
PYTHONPATH=scratch/s30/trees/er2 timeout 300 python3 benchmarks/decode_check.py --presets Qwen3-30B-A3B --layers 4 --new-tokens 128 --steps 30 --skip-hf --out $OUT/check_er2.json > $OUT/check_er2.log 2>&1
echo "check rc=$? t=$SECONDS"; tail -8 $OUT/check_er2.log
cp scratch/s30/test_moe_branch.py tests/test_moe.py
PYTHONPATH=scratch/s30/trees/er2 timeout 250 python3 -m pytest -q -p no:cacheprovider tests/test_moe.py > $OUT/test_moe.log 2>&1
echo "tests rc=$? t=$SECONDS"; tail -5 $OUT/test_moe.log
