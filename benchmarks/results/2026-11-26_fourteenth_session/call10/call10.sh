#!/bin/bash
# call 10 (2026-11-26, fourteenth session): the attention's cached keys and values staged in shared memory too
# ("kv", branch stage-kv), against main at f259fd6: the staging and bf16 model tests on kv, then Qwen3-0.6B batch 1
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s14/call10.sh $OUT/
T=scratch/s14/trees
(cd $T/kv && PYTHONPATH=$PWD timeout 150 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_staging.py \
  tests/test_models.py -k "staging or staged or bfloat16 or stage" > $OUT/pytest_kv.log 2>&1); echo "pytest rc=$?"
tail -3 $OUT/pytest_kv.log; echo "t=$SECONDS"
timeout 200 python3 benchmarks/ab.py --model Qwen3-0.6B --batch 1 --rounds 3 --passes 1 main kv=$T/kv \
  > $OUT/ab_qwen_kv.log 2>&1; echo "ab rc=$?"; grep -i "rounds\||" $OUT/ab_qwen_kv.log | tail -6; echo "t=$SECONDS"
