#!/usr/bin/env bash
# Run 2 (H100): the attention combine fused into the o projection (this tree) against main (patch reversed),
# alternating on one machine: batch 1 Qwen3-0.6B and Llama-3.2-1B, batch 8 Llama-3.2-1B; megagen only.
set -u
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
mkdir -p $OUT/logs
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/logs/gpu.txt
b() {  # name, batch, models...
  local name=$1 batch=$2; shift 2
  timeout 200 python3 -m megagen.bench --model "$@" --batch $batch --schedulers round_robin --baselines --out $OUT/$name > $OUT/logs/$name.log 2>&1
  python3 -c "
import json; r=json.load(open('$OUT/$name/bench.json'))
for row in r['results']: print('$name', row['model'], {k: round(v['median_ms'],4) for k,v in row['systems'].items()})" 2>&1 | tee -a $OUT/logs/summary.txt
}
b fused_b1_a 1 Qwen3-0.6B Llama-3.2-1B
git apply -R scratch/fuse.patch && b main_b1_a 1 Qwen3-0.6B Llama-3.2-1B
git apply scratch/fuse.patch && b fused_b1_b 1 Qwen3-0.6B Llama-3.2-1B
git apply -R scratch/fuse.patch && b main_b1_b 1 Qwen3-0.6B Llama-3.2-1B

git apply scratch/fuse.patch
cd $OUT && tar czf results.tgz logs *_b* && rm -rf logs *_b1_* *_b8
