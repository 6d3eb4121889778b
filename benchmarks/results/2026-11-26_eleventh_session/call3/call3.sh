#!/bin/bash
# call 3 (2026-11-26, eleventh session): main's GEMV loop with batch-1 blocks held as int32 pairs and row sums of 8
# products (acc8: fewer registers, no spills), at 32 x 256 and 32 x 512 blocks, against main (73dd18f)
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s11/call3.sh $OUT/
M=scratch/s11/trees2/main; A=scratch/s11/trees3/acc8
for m in Qwen3-0.6B Llama-3.2-1B; do
  timeout 280 python3 benchmarks/ab.py --model $m --batch 1 --rounds 3 --passes 1 main=$M acc8=$A acc8_512=$A:block_k=512 > $OUT/ab_b1_$m.log 2>&1; echo "ab b1 $m rc=$?"
  tail -5 $OUT/ab_b1_$m.log; echo "t=$SECONDS"
done
