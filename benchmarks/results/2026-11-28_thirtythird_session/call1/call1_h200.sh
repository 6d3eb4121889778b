#!/bin/bash
# Prepared in session 32 for session 33's first call (nvidia-h200): branch down-guess (tree "rank": 19c81d5's megagen,
# route-by-rank and the guessed down tiles, off by default) against
# main (f6fdf6b's megagen = 5baa140's) on Qwen3-30B-A3B's first 8 layers, then decode_check and the profile of RANK_OPTS
# (default: the plain rank tree; set it to the winner's options if running the later steps separately).
#   rank         = the route's top-k in one pass by rank (moe.route_tile); the route sits on the path in main (the
#                  router's last tile ends 3.3-3.6 us after its stores, the others 0.9-1.8; H200 call 2 of session 32).
#                  Predicted -1 to -1.4 us a layer: then o (7.9 us after the attention) bounds the phase, not the
#                  route (9.3). ptxas (sm_90a, one layer): 248 registers, no spills (main 242, 4/4).
#   rank_o8      = also o's 36-row tiles in 8 x 1024 blocks (Tiling.o_block_rows): 5 loop steps instead of 8 (4
#                  almost empty); o tiles ran ~0.75 us a step whatever its bytes (session 32 marks, 69% of the copy
#                  rate once started). Predicted: o -1.5 to -2 us, so the router bounds again: a further -0.3 to -1 us
#                  a layer.
#   rank_s64     = attention splits of 64 keys (attention_split_keys=64, an existing option): 32 attention tiles of
#                  two key blocks instead of 64 of one, so the last split of each KV head merges 8 splits, not 16
#                  (the merge of 64 KB of partials took ~2.6 us in session 31's profile). Predicted -0.3 to -1 us a
#                  layer, or a loss if the second key block costs more than the merge saves.
#   rank_guess   = also the experts' down tiles guessing their expert before the wait (guess_down_experts=True:
#                  the expert ids holds then, checked after the wait) and loading its first weight block then: their
#                  wait-to-input took 1.36 us against 0.51-0.72 for projections that prefetch (session 32 marks).
#                  Predicted -0.3 to -0.7 us a layer.
# ptxas (sm_90a, one layer): rank 248 registers, no spills; rank_o8 251, 2/2 spill instructions; rank_guess 246, 0.
# (rank_o8_eb16, the experts' gate/up also in 16 x 512 blocks, alone -1.0% within noise in session 32: not run.)
# carry ["scratch/s33"].
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s33/call1_h200.sh $OUT/
T=scratch/s33/trees
timeout 380 python3 benchmarks/ab.py --model Qwen3-30B-A3B --layers 8 --rounds 3 --passes 1 main=$T/main rank=$T/rank \
  rank_o8=$T/rank:o_block_rows=8 rank_s64=$T/rank:attention_split_keys=64 rank_guess=$T/rank:guess_down_experts=True \
  > $OUT/ab_moe.log 2>> $OUT/err.log
echo "ab rc=$? t=$SECONDS"; cat $OUT/ab_moe.log; grep "^#" $OUT/err.log | sort -u; tail -3 $OUT/err.log
OPTS=${RANK_OPTS:-}
PYTHONPATH=$T/rank timeout 100 python3 benchmarks/decode_check.py $OPTS --presets Qwen3-30B-A3B --layers 4 --new-tokens 128 --steps 30 --skip-hf --out $OUT/check_qwen.json > $OUT/check_qwen.log 2>&1
echo "check qwen rc=$? t=$SECONDS"; grep -E -A3 '"cosine_vs_hf_bf16"|argmax_agreement' $OUT/check_qwen.log | head -8
PYTHONPATH=$T/rank timeout $((585 - SECONDS)) python3 benchmarks/profile_decode.py $OPTS --model Qwen3-30B-A3B --layers 8 --out $OUT/prof > $OUT/prof_rank.log 2>&1
echo "profile rc=$? t=$SECONDS"; head -3 $OUT/prof_rank.log
cd $OUT && tar czf prof.tgz prof && rm -rf prof
