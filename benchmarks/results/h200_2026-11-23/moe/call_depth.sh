#!/usr/bin/env bash
# Mixtral-8x7B-v0.1 at 4, 8 and 12 of its 32 layers, each with an fp32 reference: does megagen's distance from fp32
# grow with depth as HuggingFace bf16's own does (routing flips), or apart from it (a bug)?
set -u
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
mkdir -p $OUT/logs
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
for n in 4 8 12; do
  timeout 150 python3 benchmarks/decode_check.py --presets Mixtral-8x7B-v0.1 --layers $n --new-tokens 64 --steps 20 --skip-hf --out $OUT/mixtral_${n}layers.json > $OUT/logs/m$n.log 2>&1; echo "m$n rc=$?"
  python3 -c "import json; r=json.load(open('$OUT/mixtral_${n}layers.json'))['results'][0]; print($n, {k: r.get(k) for k in ('cosine_vs_hf_bf16','cosine_vs_fp32','hf_bf16_cosine_vs_fp32','argmax_agreement_vs_hf_bf16','argmax_agreement_vs_fp32','hf_bf16_argmax_agreement_vs_fp32','tokens_equal_to_hf_generate_prefix')})"
done
