#!/usr/bin/env bash
# Call 2: poll probe; fused MLP (two block shapes) against the two-phase MLP, alternating; Qwen3-0.6B and Llama-3.2-1B.
set -u
R=$OUT/r; mkdir -p $R
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee $R/gpu.txt
git rev-parse HEAD >> $R/gpu.txt; git status --short >> $R/gpu.txt
START=$(date +%s)
el() { echo "[$(( $(date +%s) - START )) s] $*"; }
timeout 60 python3 benchmarks/poll_probe.py --out $R/poll_probe.json > $R/probe.log 2>&1; el probe rc=$?
B="python3 scratch/run_patched.py megagen.bench --model Qwen3-0.6B Llama-3.2-1B --schedulers round_robin --baselines"
run() { name=$1; shift; timeout ${T:-150} "$@" --out $R/$name > $R/$name.log 2>&1; el $name rc=$?; }
T=200 run two_a $B --option fuse_mlp=False
T=200 run fused_a $B
MLP_BLOCKS=128,512 T=200 run fused128_a $B
T=120 run two_b $B --option fuse_mlp=False
T=120 run fused_b $B
MLP_BLOCKS=128,512 T=120 run fused128_b $B
for f in two_a fused_a fused128_a two_b fused_b fused128_b; do echo "== $f"; grep -E "megagen_round_robin" $R/$f/bench.md; done | tee $R/summary.txt
tar -czf $OUT/results.tar.gz -C $R .
