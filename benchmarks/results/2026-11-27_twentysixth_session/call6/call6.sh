#!/bin/bash
# Issue 14, session 26, call 6 (H100): tree spread = main 84665a6 + an experimental option gate_up_spread_cycles: a
# staged gate/up tile t of T issues its weight box's copy t/T of that many SM cycles after it reaches the tile (spin
# on %clock64), so 128 boxes of 96 KB do not all queue at once while the o tiles load their input.
# ab.py Qwen3-0.6B: main, spread 0 (main's kernel), 3500, 6000, 9000 cycles; a profile and decode_check of 6000.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s26/trees
timeout 330 python3 benchmarks/ab.py --model Qwen3-0.6B --rounds 3 --passes 1 main=$T/main s0=$T/spread s3500=$T/spread:gate_up_spread_cycles=3500 s6000=$T/spread:gate_up_spread_cycles=6000 s9000=$T/spread:gate_up_spread_cycles=9000 > $OUT/ab_q.log 2>> $OUT/err.log
echo "ab q rc=$? t=$SECONDS"; tail -7 $OUT/ab_q.log
PYTHONPATH=$T/spread timeout 140 python3 benchmarks/profile_decode.py --model Qwen3-0.6B --option gate_up_spread_cycles=6000 --out /tmp/ps > $OUT/profile_s6000.log 2>&1
echo "profile rc=$? t=$SECONDS"; head -3 $OUT/profile_s6000.log; grep -A7 "^| phase | tiles | MB" $OUT/profile_s6000.log | head -8; grep -A7 "^| phase | wait" $OUT/profile_s6000.log
PYTHONPATH=$T/spread timeout 70 python3 benchmarks/decode_check.py --presets Qwen3-0.6B --layers 4 --new-tokens 16 --steps 20 --skip-hf --option gate_up_spread_cycles=6000 --out $OUT/decode_check.json > $OUT/decode_check.log 2>&1
echo "decode_check rc=$? t=$SECONDS"; grep -A2 "cosine_vs_fp32\|argmax_agreement\|tokens_equal" $OUT/decode_check.json | head -12
