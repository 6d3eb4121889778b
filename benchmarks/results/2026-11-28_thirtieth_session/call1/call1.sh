#!/bin/bash
# Session 30, call 1 (H100): issue 16's early routing (branch early-routing, tree er) against main, on
# Qwen3-30B-A3B's first 8 layers, ab.py one process per tree, 3 alternating rounds. er:early_routing=False is the
# branch with the feature off (should match main); er:router_tile_rows=16 packs the router's rows differently.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s30/call1.sh $OUT/
T=scratch/s30/trees
timeout 540 python3 benchmarks/ab.py --model Qwen3-30B-A3B --layers 8 --rounds 3 --passes 1 main=$T/main er=$T/er er_off=$T/er:early_routing=False er16=$T/er:router_tile_rows=16 > $OUT/ab_moe.log 2>> $OUT/err.log
echo "ab rc=$? t=$SECONDS"; cat $OUT/ab_moe.log; grep "^#" $OUT/err.log; tail -5 $OUT/err.log
