#!/bin/bash
# call 6 (2026-11-26, thirteenth session): the poll tree's megakernel, model, graph and reference tests on the GPU
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s13/call6.sh $OUT/
T=scratch/s13/trees
(cd $T/poll && PYTHONPATH=$PWD timeout 330 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_megakernel.py \
  tests/test_models.py tests/test_reference.py tests/test_graph.py > $OUT/pytest_gpu.log 2>&1; echo "pytest rc=$?")
tail -4 $OUT/pytest_gpu.log; echo "t=$SECONDS"
