#!/bin/bash
# Session 36, call 3 (nvidia-h200, carry ["scratch/s36"]): the sampler as three tasks (sample_partial: 8-entry
# lists; sample_pick: the fast path, -1 for rows it cannot draw; sample_settle: the general search for those rows,
# and the positions) against main's bitonic sampler; then the sampling tests compiled on the GPU.
# ptxas (sm_90a, Qwen3-0.6B one layer): driver 213 registers, 24/24 spill instructions (main 227, 8/4; the
# nospill measurement of call 2: 0/0). Predicted: Qwen3-0.6B sampling cost +67 (main) -> about +45 us.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s36/call3_h200.sh $OUT/
M=$PWD/scratch/s36/trees/main
for m in Qwen3-0.6B Llama-3.2-1B; do
  timeout 200 python3 benchmarks/ab.py --model $m --rounds 3 --passes 1 main_g=$M:sample=False main_s=$M:sample=True \
    new_g:sample=False new_s:sample=True > $OUT/ab_$m.log 2> $OUT/ab_$m.err
  echo "ab $m rc=$? t=$SECONDS"; cat $OUT/ab_$m.log; tail -2 $OUT/ab_$m.err
done
timeout $((560 - SECONDS)) python3 -m pytest -q -p no:cacheprovider -n 12 tests/test_sampling.py \
  -k "kernel_draws or short_lists or ranks_draw or 16_bit or distribution" > $OUT/pytest.log 2>&1
echo "pytest rc=$? t=$SECONDS"; tail -3 $OUT/pytest.log
