#!/bin/bash
# Issue 14, session 26, call 5 (H100): tree pace = main 84665a6 + staged weight boxes copied in pieces, each issued
# while the tile polls its wait once the piece IN_FLIGHT before it has landed (stage_pump), the rest when the wait is
# over (experimental options stage_piece_bytes, stage_pieces_in_flight; 0 = whole boxes as on main).
# Second form: the pieces code is noinline (one copy) and compiled only where pieces are asked (whole boxes: main's kernel).
# ab.py Qwen3-0.6B: main, whole, 32 KB x 1, 32 KB x 2, 16 KB x 2; a profile of 32 KB x 1; decode_check of it.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s26/trees
timeout 200 python3 benchmarks/ab.py --model Qwen3-0.6B --rounds 3 --passes 1 main=$T/main whole=$T/pace p32=$T/pace:stage_piece_bytes=32768 p32x2=$T/pace:stage_piece_bytes=32768,stage_pieces_in_flight=2 p16x2=$T/pace:stage_piece_bytes=16384,stage_pieces_in_flight=2 > $OUT/ab_q.log 2>> $OUT/err.log
echo "ab q rc=$? t=$SECONDS"; tail -6 $OUT/ab_q.log
PYTHONPATH=$T/pace timeout 150 python3 benchmarks/profile_decode.py --model Qwen3-0.6B --option stage_piece_bytes=32768 --out /tmp/pp > $OUT/profile_p32.log 2>&1
echo "profile rc=$? t=$SECONDS"; grep -A7 "^| phase | tiles | MB" $OUT/profile_p32.log | head -8; grep -A7 "^| phase | wait" $OUT/profile_p32.log
PYTHONPATH=$T/pace timeout 80 python3 benchmarks/decode_check.py --presets Qwen3-0.6B --layers 4 --new-tokens 16 --steps 20 --skip-hf --option stage_piece_bytes=32768 --out $OUT/decode_check.json > $OUT/decode_check.log 2>&1
echo "decode_check rc=$? t=$SECONDS"; grep -A2 "cosine_vs_fp32\|argmax_agreement\|tokens_equal" $OUT/decode_check.json | head -12
