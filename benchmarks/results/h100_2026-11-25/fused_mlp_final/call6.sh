#!/usr/bin/env bash
# Call 6 (same machine): decode_check of the fused MLP against HF bf16; profile waterfall of Qwen3-0.6B.
set -u
R=$OUT/r; mkdir -p $R
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
START=$(date +%s)
el() { echo "[$(( $(date +%s) - START )) s] $*"; }
timeout 250 python3 benchmarks/decode_check.py --presets Qwen3-0.6B --new-tokens 64 --steps 50 --skip-hf --out $R/decode_check.json > $R/decode_check.log 2>&1; el check rc=$?
timeout 120 python3 scratch/prof.py --model Qwen3-0.6B --out $R/prof_fused > $R/prof_fused.log 2>&1; el prof rc=$?
tail -30 $R/decode_check.log
cat $R/prof_fused/waterfall.md
tar -czf $OUT/results.tar.gz -C $R .
