#!/bin/bash
# call 4 (2026-11-26, fifteenth session): main (98d9b1c) against xregs (staged tiles on tensor cores) on Qwen3-0.6B,
# four rounds, with xregs at 16 attention splits (attention_split_keys=32) beside it; xregs' GPU tests; a profile of its sampling step (issue 15)
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s15/call4.sh $OUT/
T=scratch/s15/trees
timeout 230 python3 benchmarks/ab.py --model Qwen3-0.6B --batch 1 --rounds 4 --passes 1 main=$T/main mma=$T/mma \
  mma_splits16=$T/mma:attention_split_keys=32 > $OUT/ab_Qwen3-0.6B.log 2>&1; echo "ab rc=$?"
grep -i "rounds\||" $OUT/ab_Qwen3-0.6B.log | tail -8; echo "t=$SECONDS"
(cd $T/mma && PYTHONPATH=$PWD timeout 160 python3 -m pytest -q -n 8 -p no:cacheprovider \
  tests/test_staging.py tests/test_models.py > $OUT/pytest_gpu.log 2>&1); echo "pytest rc=$?"
tail -4 $OUT/pytest_gpu.log | cut -c1-300; echo "t=$SECONDS"
[ $((590 - SECONDS)) -lt 110 ] && exit 0
PYTHONPATH=$T/mma timeout $((590 - SECONDS)) python3 benchmarks/profile_decode.py --model Qwen3-0.6B --sample \
  --out /tmp/ps > $OUT/profile_qwen_sample.log 2>&1; echo "profile rc=$?"; cp /tmp/ps/profile.npz $OUT/profile_qwen_sample.npz
head -4 $OUT/profile_qwen_sample.log | tail -2; echo "t=$SECONDS"
