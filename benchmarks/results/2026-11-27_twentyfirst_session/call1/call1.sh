#!/bin/bash
# args_smem.patch (task arguments read from a row in shared memory) on a GPU: its staging tests, then A/B against
# main at Qwen3-0.6B b1 (main twice: drift) and Llama-3.2-1B b1, then the megakernel tests.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s21/call1.sh $OUT/
T=scratch/s21/trees
(cd $T/args && PYTHONPATH=$PWD timeout 150 python3 -m pytest -q -x tests/test_staging.py > $OUT/pytest_staging.log 2>&1)
echo "staging rc=$? t=$SECONDS"; tail -2 $OUT/pytest_staging.log
timeout 240 python3 benchmarks/ab.py --model Qwen3-0.6B --batch 1 --rounds 3 --passes 1 main=$T/main args=$T/args \
  main2=$T/main2 > $OUT/ab_qwen.log 2>&1; echo "ab qwen rc=$? t=$SECONDS"; grep "|" $OUT/ab_qwen.log
timeout $((420 - SECONDS)) python3 benchmarks/ab.py --model Llama-3.2-1B --batch 1 --rounds 3 --passes 1 main=$T/main \
  args=$T/args > $OUT/ab_llama.log 2>&1; echo "ab llama rc=$? t=$SECONDS"; grep "|" $OUT/ab_llama.log
(cd $T/args && PYTHONPATH=$PWD timeout $((590 - SECONDS)) python3 -m pytest -q -x tests/test_megakernel.py > $OUT/pytest_mk.log 2>&1)
echo "pytest mk rc=$? t=$SECONDS"; tail -3 $OUT/pytest_mk.log
