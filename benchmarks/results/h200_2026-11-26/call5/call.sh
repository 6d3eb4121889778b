#!/bin/bash
# call 5 (2026-11-26): Qwen3-8B with the committed default blocks (32 x 256): tokens and logits against HuggingFace
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
timeout 230 python3 benchmarks/decode_check.py --presets Qwen3-8B --new-tokens 32 --steps 20 --skip-hf \
  --out $OUT/decode_check_qwen3_8b.json > /tmp/dc.log 2>&1; echo "decode_check rc=$?"; grep -v Warning /tmp/dc.log | tail -30
