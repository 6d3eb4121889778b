#!/usr/bin/env bash
# Call 3: GEMV phases tiled for half the CTAs (consecutive phases on disjoint CTAs under round_robin) against main.
set -u
R=$OUT/r; mkdir -p $R
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
START=$(date +%s)
el() { echo "[$(( $(date +%s) - START )) s] $*"; }
run() { name=$1; half=$2; shift 2; HALF=$half timeout 150 python3 scratch/run_half.py megagen.bench --model Qwen3-0.6B Llama-3.2-1B --schedulers round_robin --baselines "$@" --out $R/$name > $R/$name.log 2>&1; el $name rc=$?; }
run base_a 1
run half_a 2
run base_b 1
run half_b 2
run half3_a 3
HALF=2 timeout 120 python3 scratch/run_half.py scratch/prof.py --model Qwen3-0.6B --out $R/prof_half > $R/prof_half.log 2>&1; el prof rc=$?
for f in base_a half_a base_b half_b half3_a; do echo "== $f $(grep -hE 'megagen_round_robin' $R/$f/bench.md | cut -d'|' -f3 | tr '\n' ' ')"; done | tee $R/summary.txt
cat $R/prof_half/waterfall.md
tar -czf $OUT/results.tar.gz -C $R .
