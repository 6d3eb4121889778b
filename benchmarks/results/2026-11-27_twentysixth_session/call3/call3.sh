#!/bin/bash
# Issue 14, session 26, call 3 (H100): tree pp = main 84665a6 + an experimental build option gate_up_prefetch_rows
# (the most rows of its weight box a staged gate/up tile copies before its wait; the rest after it). Question: does
# the o tiles' input (3.2-3.6 us from their wait) wait behind the gate/up tiles' 12.6 MB of copies, issued as the
# attention ends? ab.py Qwen3-0.6B: all rows before the wait (main's kernel), 32, 16, none; profiles of 0 and 16.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s26/trees
timeout 150 python3 benchmarks/ab.py --model Qwen3-0.6B --rounds 3 --passes 1 all=$T/pp gu32=$T/pp:gate_up_prefetch_rows=32 gu16=$T/pp:gate_up_prefetch_rows=16 gu0=$T/pp:gate_up_prefetch_rows=0 > $OUT/ab_q.log 2>> $OUT/err.log
echo "ab q rc=$? t=$SECONDS"; tail -5 $OUT/ab_q.log
for r in 0 16; do
PYTHONPATH=$T/pp timeout 150 python3 benchmarks/profile_decode.py --model Qwen3-0.6B --option gate_up_prefetch_rows=$r --out /tmp/pp$r > $OUT/profile_gu$r.log 2>&1
echo "profile $r rc=$? t=$SECONDS"; grep -A7 "^| phase | tiles | MB" $OUT/profile_gu$r.log | head -8; grep -A7 "^| phase | wait" $OUT/profile_gu$r.log
done
