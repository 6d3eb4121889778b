#!/usr/bin/env bash
# Run 6 (H100): the abort flag read every 16th poll (abort.patch) against main, alternating, megagen only.
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
b abort_a 1 Qwen3-0.6B Llama-3.2-1B
git apply -R scratch/abort.patch && b main_a 1 Qwen3-0.6B Llama-3.2-1B
git apply scratch/abort.patch && b abort_b 1 Qwen3-0.6B Llama-3.2-1B
git apply -R scratch/abort.patch && b main_b 1 Qwen3-0.6B Llama-3.2-1B
git apply scratch/abort.patch
(cd benchmarks && timeout 150 python3 profile_decode.py --model Qwen3-0.6B --out $OUT/p_q > $OUT/logs/p_q.log 2>&1
 grep -E "Step|^\|" $OUT/p_q/waterfall.md | tee -a $OUT/logs/summary.txt)
rm -rf $OUT/p_*/trace.json.gz $OUT/p_*/profile.npz
cd $OUT && tar czf results.tgz logs abort_* main_* p_* && rm -rf logs abort_* main_* p_*
