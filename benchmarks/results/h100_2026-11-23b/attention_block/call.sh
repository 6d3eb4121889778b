#!/usr/bin/env bash
# Run 7 (H100): attention blocks of 64 keys (a split's 64 keys prefetched whole before its wait) against 32
# (main's default), alternating, megagen only, batch 1; then 128.
set -u
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
mkdir -p $OUT/logs
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/logs/gpu.txt
b() {  # name, option
  local name=$1 opt=$2
  timeout 200 python3 -m megagen.bench --model Qwen3-0.6B Llama-3.2-1B --schedulers round_robin --baselines --option $opt --out $OUT/$name > $OUT/logs/$name.log 2>&1
  python3 -c "
import json; r=json.load(open('$OUT/$name/bench.json'))
for row in r['results']: print('$name', row['model'], {k: round(v['median_ms'],4) for k,v in row['systems'].items()})" 2>&1 | tee -a $OUT/logs/summary.txt
}
b ab64_a attention_block=64
b ab32_a attention_block=32
b ab64_b attention_block=64
b ab32_b attention_block=32
b ab128 attention_block=128
cd $OUT && tar czf results.tgz logs ab* && rm -rf logs ab*
