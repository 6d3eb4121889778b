#!/bin/bash
# call 3 (2026-11-26, thirteenth session): Llama-3.2-1B batch 1, greedy and sampling steps alternating in one process
# a tree: main (669407a) and waits (the branch: one-rank builds wait and release at the kernel's scope; waits
# implied through ops of partial waits dropped). Then the branch's sampling, graph and megakernel tests on the GPU.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s13/call3.sh $OUT/
T=scratch/s13/trees
timeout 250 python3 scratch/s13/ab.py --model Llama-3.2-1B --batch 1 --rounds 3 --passes 1 \
  g_main=$T/main:sample=False s_main=$T/main:sample=True g_waits=$T/waits:sample=False s_waits=$T/waits:sample=True \
  > $OUT/ab_llama.log 2>&1; echo "ab rc=$?"
grep -i "rounds\||" $OUT/ab_llama.log | tail -8; echo "t=$SECONDS"
(cd $T/waits && PYTHONPATH=$PWD timeout $((585 - SECONDS)) python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_sampling.py tests/test_graph.py tests/test_megakernel.py > $OUT/pytest_gpu.log 2>&1; echo "pytest rc=$?"); tail -3 $OUT/pytest_gpu.log; echo "t=$SECONDS"
