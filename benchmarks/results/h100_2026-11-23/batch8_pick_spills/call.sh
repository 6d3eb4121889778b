#!/usr/bin/env bash
# Batch 8 greedy: the pick a row at a time (HEAD) against all rows at once (the tree before), Llama-3.2-1B and Qwen3-0.6B.
set -u
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
mkdir -p $OUT/logs
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
run() {  # tag model
  timeout 120 python3 -m megagen.bench --model $2 --batch 8 --schedulers round_robin --baselines --out $OUT/$1 > $OUT/logs/$1.log 2>&1
  echo "$1 $(grep '| megagen_round_robin' $OUT/$1/bench.md | cut -d'|' -f3)"
}
run l_rowwise Llama-3.2-1B
git apply -R scratch/vector_pick.patch && echo "all rows at once"
run l_allrows Llama-3.2-1B
git apply scratch/vector_pick.patch && echo "a row at a time"
run q_rowwise Qwen3-0.6B
cd $OUT && tar czf all.tgz logs l_* q_* 2>/dev/null
