#!/bin/bash
# call 7 (2026-11-26, thirteenth session): main (7322aea) against ahead (main + each task's first block of
# dependency entries loaded with its record, one task ahead), greedy, Qwen3-0.6B and Llama-3.2-1B at batch 1;
# then the ahead tree's megakernel tests on the GPU
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s13/call7.sh $OUT/
T=scratch/s13/trees
for m in Qwen3-0.6B Llama-3.2-1B; do
  timeout 150 python3 benchmarks/ab.py --model $m --batch 1 --rounds 3 --passes 1 main=$T/main ahead=$T/ahead \
    > $OUT/ab_$m.log 2>&1; echo "ab $m rc=$?"
  grep -i "rounds\||" $OUT/ab_$m.log | tail -6; echo "t=$SECONDS"
done
(cd $T/ahead && PYTHONPATH=$PWD timeout 150 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_megakernel.py \
  > $OUT/pytest_gpu.log 2>&1; echo "pytest rc=$?"); tail -3 $OUT/pytest_gpu.log; echo "t=$SECONDS"
