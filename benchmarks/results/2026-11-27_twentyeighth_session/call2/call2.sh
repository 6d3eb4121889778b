#!/bin/bash
# Issue 14, session 28, call 2 (H100): tree claim = branch claimed-head (the greedy batch-1 lm_head as one tile a
# CTA claiming parts of about 128 KB at run time, each part's best kept; megagen.tasks.head). decode_check of
# Llama-3.2-1B; ab.py Llama-3.2-1B and Qwen3-0.6B: fixed tiles (claimed_lm_head=False) against claimed parts of
# 128 KB and 64 KB, one process a model.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s28/trees
PYTHONPATH=$T/claim timeout 100 python3 benchmarks/decode_check.py --presets Llama-3.2-1B --layers 4 --new-tokens 16 --steps 20 --skip-hf --out $OUT/decode_check_l.json > $OUT/decode_check_l.log 2>&1
echo "decode_check l rc=$? t=$SECONDS"; grep -A2 "cosine_vs_fp32\|argmax_agreement\|tokens_equal" $OUT/decode_check_l.json | head -12; tail -3 $OUT/decode_check_l.log
timeout $((360 - SECONDS)) python3 benchmarks/ab.py --model Llama-3.2-1B --rounds 3 --passes 1 fixed=$T/claim:claimed_lm_head=False claim=$T/claim claim64=$T/claim:lm_head_part_bytes=65536 > $OUT/ab_l.log 2>> $OUT/err.log
echo "ab l rc=$? t=$SECONDS"; tail -5 $OUT/ab_l.log
timeout $((560 - SECONDS)) python3 benchmarks/ab.py --model Qwen3-0.6B --rounds 3 --passes 1 fixed=$T/claim:claimed_lm_head=False claim=$T/claim claim64=$T/claim:lm_head_part_bytes=65536 > $OUT/ab_q.log 2>> $OUT/err.log
echo "ab q rc=$? t=$SECONDS"; tail -5 $OUT/ab_q.log
