#!/bin/bash
# Session 34, call B (nvidia-h200-x2, carry ["scratch/s34", ".whl"]). Tree exp = main 3bda8f2 + two EXPERIMENT
# build options (branch exp34), off by default, so the tree without options is main:
#   whole_row_blocks=True: batch-1 GEMV phases that stream their weights take gemv_blocks' blocks whose rows divide
#     their tiles' rows: Qwen3-8B tp=2 and Qwen3-1.7B tp=1 gate/up tiles of 48 rows in 16 x 512 blocks (24 full loop
#     steps a tile; 32 x 256 gives 32, the 16 of the second row block half empty). Call A's tp=2 profile: gate/up
#     31.5 us critical against 24.1 floor, 0.87 us a step. Predicted Qwen3-8B tp=2 -2 to -4.5%; Qwen3-1.7B -1 to -3%.
#   qkv_tiles=24x8x1024: Qwen3-8B's q/k/v in 257 tiles of 24 rows (3 whole 8 x 1024 blocks, 12 steps) on 264 CTAs
#     instead of 192 tiles of 32 (72 CTAs idle; session 17: q/k/v 17.07 us against 12.25, uneven waves 5.2).
#     Predicted -2 to -4 us a layer: -1.5 to -3%.
# Phase 1, side by side: GPU 0 Qwen3-8B's first 12 layers (qkv), GPU 1 Qwen3-1.7B (whole_row_blocks); phase 2: Qwen3-8B tp=2 with and
# without whole_row_blocks, one torchrun each (no baselines).
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache NVSHMEM_DISABLE_NVLS=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $OUT/gpu.txt
grep -q H200 $OUT/gpu.txt || { echo "not H200s: stopping"; exit 0; }
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || echo "wheel failed"
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
cp scratch/s34/callB_h200x2.sh $OUT/
T=$PWD/scratch/s34/trees/exp
CUDA_VISIBLE_DEVICES=0 timeout 270 python3 benchmarks/ab.py --model Qwen3-8B --layers 12 --rounds 3 --passes 1 \
  main=$T qkv24=$T:qkv_tiles=24x8x1024 > $OUT/ab_8b.log 2> $OUT/ab_8b.err &
CUDA_VISIBLE_DEVICES=1 timeout 270 python3 benchmarks/ab.py --model Qwen3-1.7B --rounds 3 --passes 1 \
  main=$T rowblk=$T:whole_row_blocks=True > $OUT/ab_17b.log 2> $OUT/ab_17b.err &
wait; echo "phase 1 done t=$SECONDS"; cat $OUT/ab_8b.log $OUT/ab_17b.log; tail -2 $OUT/ab_8b.err $OUT/ab_17b.err
for v in main rowblk main2; do
  left=$((580 - SECONDS)); [ $left -lt 100 ] && { echo "no time for $v"; break; }
  opt=""; [ $v = rowblk ] && opt="--option whole_row_blocks=True"
  PYTHONPATH=/tmp/site:$T timeout $left torchrun --nproc-per-node 2 -m megagen.bench_tp --model Qwen3-8B \
    --new-tokens 8 --steps 200 $opt --out $OUT/tp2_$v > $OUT/tp2_$v.log 2>&1
  echo "tp2 $v rc=$? t=$SECONDS"; grep -m1 '"median_ms"' $OUT/tp2_$v/bench_tp2.json
done
(cd $OUT && tar czf all.tgz ab_* tp2_* && rm -rf tp2_*/ && rm -f ab_* tp2_*.log)
