#!/bin/bash
# A/B: attention on CUDA cores for small KV groups (attention_dot_min_group=16, the tree's default) against
# tensor-core dots padded to 16 rows (attention_dot_min_group=1, main's form); batch 1 and 8, one process per model
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
for b in 1 8; do
  for M in Qwen3-0.6B Llama-3.2-1B; do
    BATCH=$b ROUNDS=5 timeout 200 python -m scratch.ab $M dot:attention_dot_min_group=1 cc: 2>&1 | grep -v Warning | tee $OUT/ab_b${b}_$M.log
  done
done
timeout 150 python3 benchmarks/decode_check.py --presets Qwen3-0.6B Llama-3.2-1B --new-tokens 32 --steps 20 --skip-hf \
  2>&1 | grep -v Warning | tee $OUT/decode_check.log | tail -30
