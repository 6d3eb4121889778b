#!/bin/bash
# Issue 14, call 3: the o projection merges the attention splits (tree mo, option merge_in_o, off by default),
# against the last split's ticket merge, in one process per model; decode_check and a profile with it.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s24/trees/mo
timeout 160 python3 benchmarks/ab.py --model Qwen3-0.6B --rounds 3 --passes 1 off=$T mo=$T:merge_in_o=True > $OUT/ab_q.log 2>> $OUT/err.log
echo "ab q rc=$? t=$SECONDS"; tail -4 $OUT/ab_q.log
timeout 170 python3 benchmarks/ab.py --model Llama-3.2-1B --rounds 3 --passes 1 off=$T mo=$T:merge_in_o=True > $OUT/ab_l.log 2>> $OUT/err.log
echo "ab l rc=$? t=$SECONDS"; tail -4 $OUT/ab_l.log
PYTHONPATH=$T timeout 120 python3 benchmarks/decode_check.py --presets Qwen3-0.6B Llama-3.2-1B --layers 4 --new-tokens 16 --steps 20 --skip-hf --option merge_in_o=True --out $OUT/decode_check.json > $OUT/decode_check.log 2>&1
echo "decode_check rc=$? t=$SECONDS"; tail -8 $OUT/decode_check.log
PYTHONPATH=$T timeout $((590 - SECONDS)) python3 benchmarks/profile_decode.py --model Qwen3-0.6B --option merge_in_o=True --out /tmp/pm > $OUT/profile_mo.log 2>&1
echo "profile rc=$? t=$SECONDS"; cp /tmp/pm/profile.npz $OUT/profile_mo.npz
grep -A9 "^| phase | tiles | MB" $OUT/profile_mo.log | head -10
