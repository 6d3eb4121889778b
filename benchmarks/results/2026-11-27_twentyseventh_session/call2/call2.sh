#!/bin/bash
# Issue 14, session 27, call 2 (H100): tree exp2 = exp + an experimental option staged_copy_rate (bytes per SM cycle:
# every staged phase spreads its tiles' copy starts over its weight bytes / rate cycles; 0 = main's kernel, gate/up
# 3500 cycles only). ab.py Qwen3-0.6B: base, rates 7200, 4800, 3600, 2700, 1800 in one process; a profile and
# decode_check of rate 3600.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s27/trees/exp2
timeout 330 python3 benchmarks/ab.py --model Qwen3-0.6B --rounds 3 --passes 1 base=$T r7200=$T:staged_copy_rate=7200 r4800=$T:staged_copy_rate=4800 r3600=$T:staged_copy_rate=3600 r2700=$T:staged_copy_rate=2700 r1800=$T:staged_copy_rate=1800 > $OUT/ab_q.log 2>> $OUT/err.log
echo "ab q rc=$? t=$SECONDS"; tail -7 $OUT/ab_q.log
PYTHONPATH=$T timeout 120 python3 benchmarks/profile_decode.py --model Qwen3-0.6B --option staged_copy_rate=3600 --out /tmp/pq > $OUT/profile_q.log 2>&1
echo "profile q rc=$? t=$SECONDS"; head -3 $OUT/profile_q.log; grep -A7 "^| phase | tiles | MB" $OUT/profile_q.log | head -8; grep -A7 "^| phase | wait" $OUT/profile_q.log
cp /tmp/pq/profile.npz $OUT/profile_q.npz
PYTHONPATH=$T timeout 70 python3 benchmarks/decode_check.py --presets Qwen3-0.6B --layers 4 --new-tokens 16 --steps 20 --skip-hf --option staged_copy_rate=3600 --out $OUT/decode_check.json > $OUT/decode_check.log 2>&1
echo "decode_check rc=$? t=$SECONDS"; grep -A2 "cosine_vs_fp32\|argmax_agreement\|tokens_equal" $OUT/decode_check.json | head -12
