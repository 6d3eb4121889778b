#!/usr/bin/env bash
# Call 4: lm_head tiles of 64 rows (max_tile_rows=64; every other phase's tiling is unchanged) against main.
set -u
R=$OUT/r; mkdir -p $R
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
START=$(date +%s)
el() { echo "[$(( $(date +%s) - START )) s] $*"; }
run() { name=$1; shift; timeout 150 python3 -m megagen.bench --model Qwen3-0.6B Llama-3.2-1B --schedulers round_robin --baselines "$@" --out $R/$name > $R/$name.log 2>&1; el $name rc=$?; }
run base_a
run rows64_a --option max_tile_rows=64
run base_b
run rows64_b --option max_tile_rows=64
for f in base_a rows64_a base_b rows64_b; do echo "== $f $(grep -hE 'megagen_round_robin' $R/$f/bench.md | cut -d'|' -f3 | tr '\n' ' ')"; done | tee $R/summary.txt
tar -czf $OUT/results.tar.gz -C $R .
