#!/bin/bash
# sample-select, exact (sel5: lists of 64 entries, 4 filled; full lists deepened in place before the sorting
# networks' path; the pick 118 registers): A/B of the sampling step against main (greedy for scale), then the
# branch's sampling tests on the GPU.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s19/call7.sh $OUT/
timeout 300 python3 benchmarks/ab.py --model Qwen3-0.6B --batch 1 --rounds 3 --passes 1 g_main=scratch/s19/trees/main:sample=False \
  s_main=scratch/s19/trees/main:sample=True s_sel5=scratch/s19/trees/sel5:sample=True > $OUT/ab.log 2>&1; echo "ab rc=$?"
grep "rounds\||" $OUT/ab.log | tail -8; echo "t=$SECONDS"
(cd scratch/s19/trees/sel5 && timeout $((570 - SECONDS)) python3 -m pytest -q -p no:cacheprovider tests/test_sampling.py \
  -k "kernel_draws or 16_bit or ranks or deeper or noise") > $OUT/pytest_sampling.log 2>&1; echo "pytest rc=$?"
tail -2 $OUT/pytest_sampling.log; echo "t=$SECONDS"
