#!/bin/bash
# call 9 (2026-11-26, tenth session): the sampling step of HEAD (8a33f44) against the pick with fewer registers
# (trees/samp: one rank's candidate pointers as one base and offsets; top-p as a sort and a running sum)
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s10/call9.sh $OUT/
T=scratch/s10/trees
for m in Qwen3-0.6B Llama-3.2-1B; do
  timeout 150 python3 benchmarks/ab.py --model $m --batch 1 --rounds 3 --passes 1 --sample head=$T/head samp=$T/samp > $OUT/ab_sample_$m.log 2>&1; echo "ab $m rc=$?"
  tail -4 $OUT/ab_sample_$m.log; echo "t=$SECONDS"
done
