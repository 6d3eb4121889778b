#!/bin/bash
# Issue 14, session 27, call 1 (H100): tree exp = main 0e05cee + experimental options qkv/o/down_copy_spread (the
# staged q/k/v, o and down tiles spread their weight copies' starts as gate/up's do; 0 = main's kernel).
# ab.py Qwen3-0.6B: base (main's kernel), qkv 2300, down 1700, all three (qkv 2300, o 1200, down 1700) in one process;
# profiles of main's kernel for Qwen3-0.6B and Llama-3.2-1B (npz kept for offline analysis).
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s27/trees
timeout 280 python3 benchmarks/ab.py --model Qwen3-0.6B --rounds 3 --passes 1 base=$T/exp qkv=$T/exp:qkv_copy_spread=2300 down=$T/exp:down_copy_spread=1700 all=$T/exp:qkv_copy_spread=2300,o_copy_spread=1200,down_copy_spread=1700 > $OUT/ab_q.log 2>> $OUT/err.log
echo "ab q rc=$? t=$SECONDS"; tail -5 $OUT/ab_q.log
PYTHONPATH=$T/exp timeout 130 python3 benchmarks/profile_decode.py --model Qwen3-0.6B --out /tmp/pq > $OUT/profile_q.log 2>&1
echo "profile q rc=$? t=$SECONDS"; head -3 $OUT/profile_q.log; grep -A7 "^| phase | wait" $OUT/profile_q.log
cp /tmp/pq/profile.npz $OUT/profile_q.npz
PYTHONPATH=$T/exp timeout 150 python3 benchmarks/profile_decode.py --model Llama-3.2-1B --out /tmp/pl > $OUT/profile_l.log 2>&1
echo "profile l rc=$? t=$SECONDS"; head -3 $OUT/profile_l.log; grep -A10 "^| phase | tiles | MB" $OUT/profile_l.log | head -11
cp /tmp/pl/profile.npz $OUT/profile_l.npz; ls /tmp/pq /tmp/pl
