#!/usr/bin/env bash
# Call 4 (same machine): fused MLP with a transposed down copy: tile shapes for Llama-3.2-1B and Qwen3-0.6B.
set -u
R=$OUT/r; mkdir -p $R
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache MEGAGEN_MLP_EXP=transposed
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
START=$(date +%s)
el() { echo "[$(( $(date +%s) - START )) s] $*"; }
run() { name=$1; shift; timeout ${T:-150} "$@" --out $R/$name > $R/$name.log 2>&1; el $name rc=$?; }
L="python3 scratch/run_patched.py megagen.bench --model Llama-3.2-1B --schedulers round_robin --baselines"
Q="python3 scratch/run_patched.py megagen.bench --model Qwen3-0.6B --schedulers round_robin --baselines"
T=60 run l_two $L --option fuse_mlp=False
MLP_SHAPE=16,256,512 T=100 run l_16_256 $L
MLP_SHAPE=32,256,256 T=100 run l_32_256 $L
MLP_SHAPE=16,512,512 T=100 run l_16_512 $L
MLP_SHAPE=64,128,128 T=100 run l_64_128 $L
T=60 run q_two $Q --option fuse_mlp=False
MLP_SHAPE=16,512,512 T=100 run q_16_512 $Q
MLP_SHAPE=16,128,512 T=100 run q_16_128 $Q
T=60 run q_default $Q
for f in l_two l_16_256 l_32_256 l_16_512 l_64_128 q_two q_16_512 q_16_128 q_default; do echo "== $f $(grep -E 'megagen_round_robin' $R/$f/bench.md)"; done | tee $R/summary.txt
tar -czf $OUT/results.tar.gz -C $R .
