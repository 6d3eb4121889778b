#!/bin/bash
# Session 32, call 1 (nvidia-h200): branch o-router-rows (ride) and ride-cdown against main on Qwen3-30B-A3B's first
# 8 layers (ab.py, one process a tree, 3 alternating rounds), then decode_check of ride on 4 layers, then ride's profile.
# Prediction (session 31): -2.5 to -3 us a layer (o and the router end ~7.5 us after the attention instead of 10.46).
# trees: main 83b7d88 (= 5baa140's megagen), ride 8ab5da9, ride_cdown 78dd673. carry ["scratch/s32"].
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s32/call1_h200.sh $OUT/
T=scratch/s32/trees
timeout 330 python3 benchmarks/ab.py --model Qwen3-30B-A3B --layers 8 --rounds 3 --passes 1 main=$T/main ride=$T/ride ride_cdown=$T/ride_cdown > $OUT/ab_moe.log 2>> $OUT/err.log
echo "ab rc=$? t=$SECONDS"; cat $OUT/ab_moe.log; grep "^#" $OUT/err.log | sort -u; tail -3 $OUT/err.log
PYTHONPATH=$T/ride timeout 150 python3 benchmarks/decode_check.py --presets Qwen3-30B-A3B --layers 4 --new-tokens 128 --steps 30 --skip-hf --out $OUT/check_qwen.json > $OUT/check_qwen.log 2>&1
echo "check qwen rc=$? t=$SECONDS"; grep -E -A3 '"cosine_vs_hf_bf16"|argmax_agreement' $OUT/check_qwen.log | head -12
PYTHONPATH=$T/ride timeout $((585 - SECONDS)) python3 benchmarks/profile_decode.py --model Qwen3-30B-A3B --layers 8 --out $OUT/prof > $OUT/prof_ride.log 2>&1
echo "profile rc=$? t=$SECONDS"; head -3 $OUT/prof_ride.log
cd $OUT && tar czf prof.tgz prof && rm -rf prof
