#!/bin/bash
# Session 29, call 8 (H100): a timing probe for issue 16. Tree early = branch early-router-probe: experimental
# early_router=True makes each MoE router a plain GEMV of the attention's output by a random [128, 4096] matrix
# (routing wrong, timing only), so the router and the route run beside the o projection, as a router rewritten
# over [x, a] would. ab.py, Qwen3-30B-A3B's first 8 layers, one process: main's graph against the probe.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s29/call8.sh $OUT/
T=scratch/s29/trees
timeout 400 python3 benchmarks/ab.py --model Qwen3-30B-A3B --layers 8 --rounds 3 --passes 1 main=$T/early early=$T/early:early_router=True > $OUT/ab_moe.log 2>> $OUT/err.log
echo "ab rc=$? t=$SECONDS"; cat $OUT/ab_moe.log; grep "^#" $OUT/err.log
