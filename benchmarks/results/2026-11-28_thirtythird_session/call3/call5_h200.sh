#!/bin/bash
# Session 33, call 3 (nvidia-h200): branch route-packed (tree "rie") against main on Qwen3-30B-A3B's first 8 layers.
#   rie      = the tree with its defaults: the route's picks as one max over 64-bit keys (measured alone in call 2:
#              0.5658 against main's 0.5653, no change), routing_weights picking its experts itself.
#   rie_on   = route_in_experts=True: the router's tiles only compute logits; every expert gate/up tile picks its own
#              expert from them. Predicted -0.5 to -1.5 us a layer: the route's ~3.5 us after the router's last
#              stores leaves the path, bounded by o's end (8.2-8.5 us after the attention; the router ended 8.9-10.1).
#   rie_on_o8 = also o_block_rows=8 (o's 36-row tiles in 8 x 1024 blocks, 5 loop steps instead of 8): o then bounds,
#              so a further -0.3 to -1 us a layer.
# Then decode_check (4 layers) and the profile of rie_on_o8. carry ["scratch/s33"].
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s33/call5_h200.sh $OUT/
R=$PWD; T=$R/scratch/s33/trees
timeout 330 python3 benchmarks/ab.py --model Qwen3-30B-A3B --layers 8 --rounds 3 --passes 1 main=$T/main rie=$T/rie \
  rie_on=$T/rie:route_in_experts=True rie_on_o8=$T/rie:route_in_experts=True,o_block_rows=8 \
  > $OUT/ab_moe.log 2>> $OUT/err.log
echo "ab rc=$? t=$SECONDS"; cat $OUT/ab_moe.log; grep "^#" $OUT/err.log | sort -u; tail -3 $OUT/err.log
O="--option route_in_experts=True --option o_block_rows=8"
PYTHONPATH=$T/rie timeout 100 python3 benchmarks/decode_check.py $O --presets Qwen3-30B-A3B --layers 4 --new-tokens 128 --steps 30 --skip-hf --out $OUT/check_qwen.json > $OUT/check_qwen.log 2>&1
echo "check rc=$? t=$SECONDS"; grep -E -A3 '"cosine_vs_hf_bf16"|argmax_agreement' $OUT/check_qwen.log | head -8
PYTHONPATH=$T/rie timeout $((585 - SECONDS)) python3 benchmarks/profile_decode.py $O --model Qwen3-30B-A3B --layers 8 --out $OUT/prof > $OUT/prof_rie.log 2>&1
echo "profile rc=$? t=$SECONDS"; head -3 $OUT/prof_rie.log
cd $OUT && tar czf prof.tgz prof && rm -rf prof
