#!/bin/bash
# Session 32, call 2 (nvidia-h200): branch moe-stage-o (tree "stage": Tiling.stage_moe_o, o and early routing's
# router stage their weights while the attention runs) against main on Qwen3-30B-A3B's first 8 layers, then
# decode_check of stage_o on 4 layers, then its profile. Prediction: o + router end ~5 us after the attention instead
# of ~9.7 (H200 profile of call 1): -3 to -5 us a layer, 0.572 -> ~0.54 ms, unless the smaller L1 slows the experts.
# trees: main 83b7d88 (= 5baa140's megagen), stage = moe-stage-o. carry ["scratch/s32"].
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s32/call2_h200.sh $OUT/
T=scratch/s32/trees
timeout 330 python3 benchmarks/ab.py --model Qwen3-30B-A3B --layers 8 --rounds 3 --passes 1 main=$T/main stage_o=$T/stage:stage_moe_o=True stage_o_fast=$T/stage:stage_moe_o=True,copy_issue_rate=3600 > $OUT/ab_moe.log 2>> $OUT/err.log
echo "ab rc=$? t=$SECONDS"; cat $OUT/ab_moe.log; grep "^#" $OUT/err.log | sort -u; tail -3 $OUT/err.log
PYTHONPATH=$T/stage timeout 150 python3 benchmarks/decode_check.py --option stage_moe_o=True --presets Qwen3-30B-A3B --layers 4 --new-tokens 128 --steps 30 --skip-hf --out $OUT/check_qwen.json > $OUT/check_qwen.log 2>&1
echo "check qwen rc=$? t=$SECONDS"; grep -E -A3 '"cosine_vs_hf_bf16"|argmax_agreement' $OUT/check_qwen.log | head -12
PYTHONPATH=$T/stage timeout $((585 - SECONDS)) python3 benchmarks/profile_decode.py --option stage_moe_o=True --model Qwen3-30B-A3B --layers 8 --out $OUT/prof > $OUT/prof_stage.log 2>&1
echo "profile rc=$? t=$SECONDS"; head -3 $OUT/prof_stage.log
cd $OUT && tar czf prof.tgz prof && rm -rf prof
