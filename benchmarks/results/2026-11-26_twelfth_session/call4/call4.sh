#!/bin/bash
# call 4 (2026-11-26, twelfth session): the sampling tests on the GPU on main after the pick's tie fix
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s12/call4.sh $OUT/
T=$PWD/scratch/s12/trees/final
(cd $T && PYTHONPATH=$T timeout 540 python3 -m pytest -q -x -n 8 tests/test_sampling.py > $OUT/pytest_sampling.log 2>&1; echo "pytest rc=$?"); tail -3 $OUT/pytest_sampling.log
