#!/bin/bash
# Session 34, call E (nvidia-h200; main ed67198, the working tree): tests/test_moe.py on the GPU, the union of the
# rows' experts at batch > 1 (moe.expert_union) included. Short: the session's device time is nearly spent.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s34/callE_h200.sh $OUT/
timeout 140 python3 -m pytest -v -p no:cacheprovider -n 12 tests/test_moe.py > $OUT/pytest_moe.log 2>&1
echo "pytest rc=$? t=$SECONDS"; grep -E "FAILED|ERROR| passed| failed" $OUT/pytest_moe.log | tail -12
