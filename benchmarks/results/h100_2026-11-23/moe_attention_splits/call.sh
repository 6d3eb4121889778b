#!/usr/bin/env bash
# Attention splits for a model of 4 KV heads (GQA 8): Qwen3-30B-A3B, first 8 layers, context 512 (cache 544):
# 8 splits (attention_split_keys=64, the default: 32 tiles), 16 (=32: 64 tiles), 32 (=1: 128 tiles); megagen only.
set -u
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
mkdir -p $OUT/logs
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/logs/gpu.txt
for k in 64 32 1 64; do
  timeout 150 python3 benchmarks/decode_check.py --presets Qwen3-30B-A3B --layers 8 --new-tokens 16 --steps 100 --skip-check --skip-hf --option attention_split_keys=$k --out $OUT/moe8_k${k}.json > $OUT/logs/k$k.log 2>&1
  python3 -c "import json; r=json.load(open('$OUT/moe8_k${k}.json'))['results'][0]; print('keys $k', round(r['megagen_cuda_graph']['median_ms'], 4), round(r['megagen_cuda_graph']['fraction_of_floor'], 3))" | tee -a $OUT/logs/summary.txt
done
