#!/usr/bin/env bash
# Call 2: the attention tile in isolation (probe), then main (base) against KV loads after the wait with main's loop (nopf).
set -u
R=$OUT/r; mkdir -p $R
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
ROOT=$PWD
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
START=$(date +%s)
el() { echo "[$(( $(date +%s) - START )) s] $*"; }
timeout 100 python3 scratch/attn_probe.py > $R/probe_new.log 2>&1; el probe_new rc=$?
(cd scratch/base && timeout 100 python3 $ROOT/scratch/attn_probe.py > $R/probe_base.log 2>&1); el probe_base rc=$?
cat $R/probe_new.log $R/probe_base.log
run() { name=$1; dir=$2; shift 2; (cd $dir && timeout 110 python3 -m megagen.bench --model Qwen3-0.6B Llama-3.2-1B --schedulers round_robin --baselines "$@" --out $R/$name > $R/$name.log 2>&1); el $name rc=$?; }
run base_a scratch/base
run nopf_a scratch/nopf
run base_b scratch/base
run nopf_b scratch/nopf
for f in base_a nopf_a base_b nopf_b; do echo "== $f $(grep -hE 'megagen_round_robin' $R/$f/bench.md | cut -d'|' -f3 | tr '\n' ' ')"; done | tee $R/summary.txt
tar -czf $OUT/results.tar.gz -C $R .
