#!/bin/bash
# Session 30, call 3 (H100): early routing revised (tree er2 = branch early-routing + router_route after o in the
# order, routing weights in a one-tile task beside gate/up) against main, Qwen3-30B-A3B's first 8 layers, ab.py;
# er2:router_tile_rows=2 and =1 put more, smaller router tiles behind o tiles.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s30/call3.sh $OUT/
T=scratch/s30/trees
timeout 500 python3 benchmarks/ab.py --model Qwen3-30B-A3B --layers 8 --rounds 3 --passes 1 main=$T/main er2=$T/er2 er2r2=$T/er2:router_tile_rows=2 er2r1=$T/er2:router_tile_rows=1 > $OUT/ab_moe.log 2>> $OUT/err.log
echo "ab rc=$? t=$SECONDS"; cat $OUT/ab_moe.log; grep "^#" $OUT/err.log | sort -u; tail -3 $OUT/err.log
