#!/bin/bash
# The shortlist sampler (v3: short lists of 3 keys, a pick by counting, the exact draw as a task of its own for the
# rows they cannot decide) against main's sampling step: Qwen3-0.6B and Llama-3.2-1B at batch 1 (greedy main for
# scale; bound = v3 without its exact task, not exact, a measurement only), then v3's sampling tests on the GPU.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s21/call3.sh $OUT/
T=scratch/s21/trees
timeout 300 python3 benchmarks/ab.py --model Qwen3-0.6B --batch 1 --rounds 3 --passes 1 --sample \
  g_main=$T/main:sample=False s_main=$T/main s_v4=$T/v4 s_main2=$T/main2 > $OUT/ab_qwen.log 2>&1
echo "ab qwen rc=$? t=$SECONDS"; grep "|" $OUT/ab_qwen.log
timeout $((480 - SECONDS)) python3 benchmarks/ab.py --model Llama-3.2-1B --batch 1 --rounds 3 --passes 1 --sample \
  g_main=$T/main:sample=False s_main=$T/main s_v4=$T/v4 > $OUT/ab_llama.log 2>&1
echo "ab llama rc=$? t=$SECONDS"; grep "|" $OUT/ab_llama.log
(cd $T/v4 && PYTHONPATH=$PWD timeout $((590 - SECONDS)) python3 -m pytest -q -x tests/test_sampling.py -k "distribution or crowd or (kernel_draws and plain and -4)" > $OUT/pytest_sampling.log 2>&1)
echo "pytest rc=$? t=$SECONDS"; tail -3 $OUT/pytest_sampling.log
