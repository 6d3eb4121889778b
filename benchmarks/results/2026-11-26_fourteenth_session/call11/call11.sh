#!/bin/bash
# call 11 (2026-11-26, fourteenth session): main's staging tests (a decode step staged against staging off added)
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s14/call11.sh $OUT/
timeout 150 python3 -m pytest -q -n 4 -p no:cacheprovider tests/test_staging.py > $OUT/pytest_staging.log 2>&1
echo "pytest rc=$?"; tail -3 $OUT/pytest_staging.log; echo "t=$SECONDS"
