#!/usr/bin/env bash
# Run 1 (H100): main's batch-1 waterfalls (Qwen3-0.6B, Llama-3.2-1B) with 8 attention splits; moe-route vs main.
set -u
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
mkdir -p $OUT/logs
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/logs/gpu.txt
git rev-parse HEAD >> $OUT/logs/gpu.txt
(cd benchmarks && for m in Qwen3-0.6B Llama-3.2-1B; do
  timeout 150 python3 profile_decode.py --model $m --out $OUT/p_$m > $OUT/logs/p_$m.log 2>&1
  grep -E "Step|^\|" $OUT/p_$m/waterfall.md | tee -a $OUT/logs/summary.txt
done)
moe() {
  timeout 130 python3 benchmarks/decode_check.py --presets Qwen3-30B-A3B --layers 8 --new-tokens 16 --steps 100 --skip-check --skip-hf --out $OUT/$1.json > $OUT/logs/$1.log 2>&1
  python3 -c "import json; r=json.load(open('$OUT/$1.json'))['results'][0]; print('$1', round(r['megagen_cuda_graph']['median_ms'], 4))" | tee -a $OUT/logs/summary.txt
}
moe main_a
git apply scratch/moe_route.patch && moe route_a
git apply -R scratch/moe_route.patch && moe main_b
git apply scratch/moe_route.patch && moe route_b
git apply -R scratch/moe_route.patch
rm -rf $OUT/p_*/trace.json.gz $OUT/p_*/profile.npz
cd $OUT && tar czf results.tgz logs p_* *.json && rm -rf logs p_* *.json
