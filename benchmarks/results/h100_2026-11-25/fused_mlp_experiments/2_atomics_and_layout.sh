#!/usr/bin/env bash
# Call 3 (same machine): why the fused MLP is slower: stores instead of atomics (wrong results, timing only),
# a transposed copy of the down weights (contiguous rows), both; and profiles.
set -u
R=$OUT/r; mkdir -p $R
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
START=$(date +%s)
el() { echo "[$(( $(date +%s) - START )) s] $*"; }
B="python3 -m megagen.bench --model Qwen3-0.6B Llama-3.2-1B --schedulers round_robin --baselines"
run() { name=$1; shift; timeout ${T:-150} "$@" --out $R/$name > $R/$name.log 2>&1; el $name rc=$?; }
MEGAGEN_MLP_EXP= T=120 run fused $B
MEGAGEN_MLP_EXP=store T=200 run store $B
MEGAGEN_MLP_EXP=transposed T=200 run transposed $B
MEGAGEN_MLP_EXP=store,transposed T=200 run both $B
for f in fused store transposed both; do echo "== $f"; grep -E "megagen_round_robin" $R/$f/bench.md; done | tee $R/summary.txt
MEGAGEN_MLP_EXP= timeout 100 python3 scratch/prof.py --model Qwen3-0.6B --out $R/prof_fused > $R/prof_fused.log 2>&1; el prof rc=$?
tar -czf $OUT/results.tar.gz -C $R .
cat $R/prof_fused/waterfall.md
