#!/usr/bin/env bash
# Call 5: q/k/v and o tiled to leave the attention's and the combine's CTAs idle (reserve_ctas, the working tree's
# default) against main's tiling (--option reserve_ctas=False), alternating.
set -u
R=$OUT/r; mkdir -p $R
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
START=$(date +%s)
el() { echo "[$(( $(date +%s) - START )) s] $*"; }
run() { name=$1; shift; timeout 120 python3 -m megagen.bench --model Qwen3-0.6B Llama-3.2-1B --schedulers round_robin --baselines "$@" --out $R/$name > $R/$name.log 2>&1; el $name rc=$?; }
run main_a --option reserve_ctas=False
run reserve_a
run main_b --option reserve_ctas=False
run reserve_b
for f in main_a reserve_a main_b reserve_b; do echo "== $f $(grep -hE 'megagen_round_robin' $R/$f/bench.md | cut -d'|' -f3 | tr '\n' ' ')"; done | tee $R/summary.txt
tar -czf $OUT/results.tar.gz -C $R .
