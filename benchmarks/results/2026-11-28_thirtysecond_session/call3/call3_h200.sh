#!/bin/bash
# Session 32, call 3 (nvidia-h200): branch expert-blocks (tree "eblk": Tiling.expert_block_rows, the experts' gate/up
# tiles of 48 rows stream 16 x 512 or 8 x 1024 weight blocks instead of 32 x 256, whose second row block is half
# empty) against main on Qwen3-30B-A3B's first 8 layers, then the profile of eb16. Prediction: gate/up's tiles take
# 12 full loop steps instead of 16 (8 half empty); on the H200 a step is ~0.95 us whatever its bytes, so gate/up
# 17.5 -> ~13-14 us critical: -2.5 to -3.5 us a layer (0.566 -> ~0.545 ms), less if latency was not the bound.
# ptxas (sm_90a, 1 layer): eb16 251 registers, 22/22 spill instructions; eb8 251, 4/4; main 242, 4/4.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s32/call3_h200.sh $OUT/
T=scratch/s32/trees
timeout 330 python3 benchmarks/ab.py --model Qwen3-30B-A3B --layers 8 --rounds 3 --passes 1 main=$T/main eb16=$T/eblk:expert_block_rows=16 eb8=$T/eblk:expert_block_rows=8 > $OUT/ab_moe.log 2>> $OUT/err.log
echo "ab rc=$? t=$SECONDS"; cat $OUT/ab_moe.log; grep "^#" $OUT/err.log | sort -u; tail -3 $OUT/err.log
PYTHONPATH=$T/eblk timeout $((500 - SECONDS)) python3 benchmarks/profile_decode.py --option expert_block_rows=16 --model Qwen3-30B-A3B --layers 8 --out $OUT/prof > $OUT/prof_eb16.log 2>&1
echo "profile rc=$? t=$SECONDS"; head -3 $OUT/prof_eb16.log
cd $OUT && tar czf prof.tgz prof && rm -rf prof
