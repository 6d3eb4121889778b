#!/bin/bash
# Session 33, call 4 (nvidia-h200): call 3 measured the tree rie (route-packed's defaults: the route's picks as one
# max over 64-bit keys, and routing_weights picking its experts itself) at 0.5606 against main's 0.5713 (-1.9%),
# where call 2 measured the packed picks alone at 0.5658 against 0.5653. Again, on another machine, with both:
# main, packed (main + the packed picks), rie. Then the whole Qwen3-30B-A3B with rie beside HF static + CUDA graph
# and PDL op by op, as far as the call's time goes. carry ["scratch/s33"].
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s33/call6_h200.sh $OUT/
R=$PWD; T=$R/scratch/s33/trees
timeout 230 python3 benchmarks/ab.py --model Qwen3-30B-A3B --layers 8 --rounds 3 --passes 1 main=$T/main packed=$T/packed rie=$T/rie \
  > $OUT/ab_moe.log 2>> $OUT/err.log
echo "ab rc=$? t=$SECONDS"; cat $OUT/ab_moe.log; grep "^#" $OUT/err.log | sort -u; tail -3 $OUT/err.log
(cd /tmp && PYTHONPATH=$T/rie timeout $((530 - SECONDS)) python3 -m megagen.bench --model Qwen3-30B-A3B --batch 1 --schedulers round_robin \
  --baselines hf_static_cuda_graph ops_pdl_cuda_graph --out $OUT/bench_rie > $OUT/bench_rie.log 2>&1); echo "bench rc=$? t=$SECONDS"
grep -A6 "^| system" $OUT/bench_rie/bench.md; tail -2 $OUT/bench_rie.log
rm -f $OUT/bench_rie/bench.png
cd $OUT && tar czf bench.tgz bench_rie 2>/dev/null && rm -rf bench_rie
