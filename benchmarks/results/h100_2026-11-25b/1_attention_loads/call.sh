#!/usr/bin/env bash
# Call 1: attention KV loads after the wait (new) / before it with a two-block loop (kvearly) / main (base), alternating;
# then a profile of the new tree on Qwen3-0.6B.
set -u
R=$OUT/r; mkdir -p $R
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
ROOT=$PWD
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv | tee $R/gpu.txt
START=$(date +%s)
el() { echo "[$(( $(date +%s) - START )) s] $*"; }
run() { name=$1; dir=$2; shift 2; (cd $dir && timeout 110 python3 -m megagen.bench --model Qwen3-0.6B Llama-3.2-1B --schedulers round_robin --baselines "$@" --out $R/$name > $R/$name.log 2>&1); el $name rc=$?; }
run base_a scratch/base
run new_a .
run early_a scratch/kvearly
run new_b .
run base_b scratch/base
run early_b scratch/kvearly
timeout 120 python3 scratch/prof.py --model Qwen3-0.6B --out $R/prof_new > $R/prof_new.log 2>&1; el prof rc=$?
for f in base_a new_a early_a new_b base_b early_b; do echo "== $f $(grep -hE 'megagen_round_robin' $R/$f/bench.md | tr '\n' ' ')"; done | tee $R/summary.txt
cat $R/prof_new/waterfall.md
tar -czf $OUT/results.tar.gz -C $R .
