#!/usr/bin/env bash
# Run 5 (H100): acquire-load polls (poll.patch) against main, alternating, megagen only, batch 1.
set -u
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
mkdir -p $OUT/logs
git apply -R scratch/fuse.patch || exit 1
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/logs/gpu.txt
b() {  # name, batch, models...
  local name=$1 batch=$2; shift 2
  timeout 200 python3 -m megagen.bench --model "$@" --batch $batch --schedulers round_robin --baselines --out $OUT/$name > $OUT/logs/$name.log 2>&1
  python3 -c "
import json; r=json.load(open('$OUT/$name/bench.json'))
for row in r['results']: print('$name', row['model'], {k: round(v['median_ms'],4) for k,v in row['systems'].items()})" 2>&1 | tee -a $OUT/logs/summary.txt
}
b poll_a 1 Qwen3-0.6B Llama-3.2-1B
grep -q "bench.json" $OUT/logs/summary.txt && { tail -5 $OUT/logs/poll_a.log; }
git apply -R scratch/poll.patch && b main_a 1 Qwen3-0.6B Llama-3.2-1B
git apply scratch/poll.patch && b poll_b 1 Qwen3-0.6B Llama-3.2-1B
git apply -R scratch/poll.patch && b main_b 1 Qwen3-0.6B Llama-3.2-1B
git apply scratch/poll.patch && b poll_b8 8 Llama-3.2-1B
cd $OUT && tar czf results.tgz logs poll_* main_* && rm -rf logs poll_* main_*
