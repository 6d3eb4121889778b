#!/usr/bin/env bash
# Batch 1: sampling's cost over greedy (bench --sample, the merged sampling tasks), then more CTAs an SM under a
# register cap (maxnreg.patch: max_registers), megagen only.
set -u
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
mkdir -p $OUT/logs
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
git apply scratch/sampling_ff5167d.patch && echo "sampling ff5167d"
timeout 260 python3 -m megagen.bench --model Qwen3-0.6B Llama-3.2-1B --schedulers round_robin --baselines --sample --out $OUT/sample_bench > $OUT/logs/sample.log 2>&1
grep "| megagen\|drawing" $OUT/sample_bench/bench.md
git apply -R scratch/sampling_ff5167d.patch
git apply scratch/maxnreg.patch && echo "max_registers"
for cfg in "396 168" "528 128"; do
  set -- $cfg
  timeout 100 python3 -m megagen.bench --model Qwen3-0.6B --schedulers round_robin --baselines --option num_ctas=$1 --option max_registers=$2 --out $OUT/regs_$1 > $OUT/logs/regs_$1.log 2>&1
  echo "num_ctas=$1 max_registers=$2 $(grep '| megagen_round_robin' $OUT/regs_$1/bench.md | cut -d'|' -f3)"
done
git apply -R scratch/maxnreg.patch
cd $OUT && tar czf all.tgz logs sample_bench regs_* 2>/dev/null
