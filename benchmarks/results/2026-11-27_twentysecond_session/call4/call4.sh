#!/bin/bash
# Issue 16: Qwen3-30B-A3B's first 8 layers, main (7514a2c) against gate/up tiles picking their experts from the
# router logits (routing); decode_check on routing.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s22/trees
timeout 240 python3 benchmarks/ab.py --model Qwen3-30B-A3B --layers 8 --rounds 3 --passes 1 \
  main=$T/main routing=$T/routing main_again=$T/main > $OUT/ab_moe.log 2> $OUT/ab_moe.err; echo "ab rc=$? t=$SECONDS"
tail -6 $OUT/ab_moe.log
PYTHONPATH=$T/routing timeout $((400 - SECONDS)) python3 benchmarks/decode_check.py --presets Qwen3-30B-A3B --layers 4 --new-tokens 16 --steps 20 --skip-hf --out $OUT/decode_check_moe.json > $OUT/decode_check.log 2>&1; echo "check rc=$? t=$SECONDS"
python3 -c "
import json; r=json.load(open('$OUT/decode_check_moe.json'))['results'][0]
print({k: r[k] for k in ('cosine_vs_hf_bf16','cosine_vs_fp32','hf_bf16_cosine_vs_fp32','argmax_agreement_vs_hf_bf16','argmax_agreement_vs_fp32','tokens_equal_to_hf_generate_prefix') if k in r})"
