#!/usr/bin/env bash
# Qwen3-30B-A3B (first 8 layers): the experts' gate/up tiles aligned to down's K (768: 48-row tiles, 256 of them)
# against aligned to its chunk padded to whole blocks (1024: 64 rows, 192 tiles); same machine, alternating.
set -u
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
mkdir -p $OUT/logs
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/logs/gpu.txt
run() {
  timeout 130 python3 benchmarks/decode_check.py --presets Qwen3-30B-A3B --layers 8 --new-tokens 16 --steps 100 --skip-check --skip-hf --out $OUT/$1.json > $OUT/logs/$1.log 2>&1
  python3 -c "import json; r=json.load(open('$OUT/$1.json'))['results'][0]; print('$1', round(r['megagen_cuda_graph']['median_ms'], 4))" | tee -a $OUT/logs/summary.txt
}
run k768_a
git apply -R scratch/kchunk.patch && run k1024_a
git apply scratch/kchunk.patch && run k768_b
git apply -R scratch/kchunk.patch && run k1024_b
git apply scratch/kchunk.patch
cd benchmarks && timeout 150 python3 profile_decode.py --model Qwen3-30B-A3B --layers 8 --out $OUT/p_moe > $OUT/logs/p_moe.log 2>&1
cat $OUT/p_moe/waterfall.md | grep -E "experts|Step"
