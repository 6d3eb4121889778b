#!/bin/bash
# call 2 (2026-11-26, sixteenth session): branch warm-next: the CTA's task before a staged tile reached only as its
# producers finish asks L2 for that tile's weights (warm_next=producers), against off (main's kernel) and all.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s16/call2.sh $OUT/
T=scratch/s16/trees
timeout 220 python3 benchmarks/ab.py --model Qwen3-0.6B --batch 1 --rounds 4 --passes 1 off=$T/warm:warm_next=off \
  producers=$T/warm all=$T/warm:warm_next=all > $OUT/ab_Qwen3-0.6B.log 2>&1; echo "ab rc=$?"
grep "rounds\||" $OUT/ab_Qwen3-0.6B.log | tail -8; echo "t=$SECONDS"
(cd $T/warm && PYTHONPATH=$PWD timeout 100 python3 -m pytest -q -p no:cacheprovider tests/test_staging.py \
  > $OUT/pytest_staging.log 2>&1); echo "pytest rc=$?"; tail -2 $OUT/pytest_staging.log | cut -c1-300; echo "t=$SECONDS"
[ $((590 - SECONDS)) -lt 100 ] && exit 0
PYTHONPATH=$T/warm timeout $((590 - SECONDS)) python3 benchmarks/profile_decode.py --model Qwen3-0.6B \
  --out /tmp/pw > $OUT/profile_Qwen3-0.6B_producers.log 2>&1; echo "profile rc=$?"
cp /tmp/pw/profile.npz $OUT/profile_Qwen3-0.6B_producers.npz; head -4 $OUT/profile_Qwen3-0.6B_producers.log | tail -2
echo "t=$SECONDS"
[ $((590 - SECONDS)) -lt 60 ] && exit 0
PYTHONPATH=$T/warm timeout $((590 - SECONDS)) python3 benchmarks/decode_check.py --presets Qwen3-0.6B --layers 4 \
  --new-tokens 16 --skip-hf --out $OUT/check.json > $OUT/check.log 2>&1; echo "check rc=$?"; tail -3 $OUT/check.log
