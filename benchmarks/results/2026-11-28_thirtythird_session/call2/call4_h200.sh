#!/bin/bash
# Session 33, call 2 (nvidia-h200): the route's top-k as one max a pick over 64-bit keys (branch route-packed, tree
# "packed") against main on Qwen3-30B-A3B's first 8 layers. Predicted -0.8 to -1.3 us a layer (8 of the route's 18
# cross-warp reductions gone, ~0.15 us each; o ends 7.9 us after the attention, the route 9.3-10.1).
# Then decode_check (4 layers) of packed, and the whole model with packed if it is >1% faster, else its profile.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s33/call4_h200.sh $OUT/
R=$PWD; T=$R/scratch/s33/trees
timeout 260 python3 benchmarks/ab.py --model Qwen3-30B-A3B --layers 8 --rounds 3 --passes 1 main=$T/main packed=$T/packed \
  > $OUT/ab_moe.log 2>> $OUT/err.log
echo "ab rc=$? t=$SECONDS"; cat $OUT/ab_moe.log; grep "^#" $OUT/err.log | sort -u; tail -3 $OUT/err.log
PYTHONPATH=$T/packed timeout 100 python3 benchmarks/decode_check.py --presets Qwen3-30B-A3B --layers 4 --new-tokens 128 --steps 30 --skip-hf --out $OUT/check_qwen.json > $OUT/check_qwen.log 2>&1
echo "check rc=$? t=$SECONDS"; grep -E -A3 '"cosine_vs_hf_bf16"|argmax_agreement' $OUT/check_qwen.log | head -8
W=$(awk -F'|' '/^\| main \|/{m=$3} /^\| packed \|/{p=$3} END{print (p>0 && p<0.99*m)?"packed":"main"}' $OUT/ab_moe.log)
if [ "$W" = main ]; then  # no win: the packed tree's profile says why, the whole model is main's 2.634 already
PYTHONPATH=$T/packed timeout $((585 - SECONDS)) python3 benchmarks/profile_decode.py --model Qwen3-30B-A3B --layers 8 --out $OUT/prof > $OUT/prof_packed.log 2>&1
echo "profile rc=$? t=$SECONDS"; head -3 $OUT/prof_packed.log; cd $OUT && tar czf prof.tgz prof && rm -rf prof; exit 0
fi
echo "whole model with $W t=$SECONDS" | tee $OUT/which.txt
(cd /tmp && PYTHONPATH=$T/$W timeout $((585 - SECONDS)) python3 -m megagen.bench --model Qwen3-30B-A3B --batch 1 --schedulers round_robin \
  --baselines hf_static_cuda_graph ops_pdl_cuda_graph --out $OUT/bench_$W > $OUT/bench_$W.log 2>&1); echo "bench rc=$? t=$SECONDS"
grep -A6 "^| system" $OUT/bench_$W/bench.md
rm -f $OUT/bench_*/bench.png
cd $OUT && tar czf bench.tgz bench_* 2>/dev/null && rm -rf bench_main bench_packed
