#!/usr/bin/env bash
# Run 4 (H100): acquire-load polls (poll.patch) and the combine fused into o (fuse.patch), 2x2, megagen only,
# batch 1 Qwen3-0.6B and Llama-3.2-1B, one machine. The tree arrives with both applied.
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
b poll_fused_a 1 Qwen3-0.6B Llama-3.2-1B
git apply -R scratch/poll.patch && b fused 1 Qwen3-0.6B Llama-3.2-1B
git apply -R scratch/fuse.patch && b main 1 Qwen3-0.6B Llama-3.2-1B
git apply scratch/poll.patch && b poll_main 1 Qwen3-0.6B Llama-3.2-1B
git apply scratch/fuse.patch && b poll_fused_b 1 Qwen3-0.6B Llama-3.2-1B
cd $OUT && tar czf results.tgz logs poll_* fused main && rm -rf logs poll_* fused main
