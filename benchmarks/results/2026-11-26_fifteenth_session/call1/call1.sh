#!/bin/bash
# call 1 (2026-11-26, fifteenth session): staged GEMV tiles on tensor cores (branch xregs) against main (98d9b1c):
# the staging GPU tests, A/B on Qwen3-0.6B (the preset that stages), its profile, decode_check's cosine
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s15/call1.sh $OUT/
T=scratch/s15/trees
(cd $T/mma && PYTHONPATH=$PWD timeout 150 python3 -m pytest -q -n 4 -p no:cacheprovider tests/test_staging.py \
  > $OUT/pytest_staging.log 2>&1); echo "pytest rc=$?"; tail -15 $OUT/pytest_staging.log | cut -c1-300; echo "t=$SECONDS"
timeout 170 python3 benchmarks/ab.py --model Qwen3-0.6B --batch 1 --rounds 3 --passes 1 main=$T/main mma=$T/mma \
  > $OUT/ab_Qwen3-0.6B.log 2>&1; echo "ab rc=$?"; grep -i "rounds\||" $OUT/ab_Qwen3-0.6B.log | tail -6; echo "t=$SECONDS"
PYTHONPATH=$T/mma timeout 130 python3 benchmarks/profile_decode.py --model Qwen3-0.6B --out /tmp/pq > $OUT/profile_qwen.log 2>&1
echo "profile rc=$?"; cp /tmp/pq/profile.npz $OUT/profile_qwen.npz; head -4 $OUT/profile_qwen.log; echo "t=$SECONDS"
PYTHONPATH=$T/mma timeout $((590 - SECONDS)) python3 benchmarks/decode_check.py --presets Qwen3-0.6B --layers 4 \
  --new-tokens 16 --skip-hf --out $OUT/check_qwen.json > $OUT/check_qwen.log 2>&1; echo "check rc=$?"
tail -5 $OUT/check_qwen.log; echo "t=$SECONDS"
