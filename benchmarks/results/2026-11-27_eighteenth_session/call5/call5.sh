#!/bin/bash
# call 5 (2026-11-27, eighteenth session): main's tp=2 stalled in call 4 (Qwen3-8B, its first launch). Which models
# stall, and did the tree of 7754e49 (2026-11-22)? tiny-qwen3 and Qwen3-1.7B at tp=2, main then 7754e49.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache NVSHMEM_DISABLE_NVLS=1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || echo "wheel failed"
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s18/call5.sh $OUT/
one() {  # name tree model timeout
  local left=$((590 - SECONDS)); [ $left -lt 40 ] && { echo "$1 skipped"; return; }
  [ $4 -lt $left ] && left=$4
  PYTHONPATH=/tmp/site${2:+:$2} timeout $left torchrun --nproc-per-node 2 -m megagen.bench_tp --model $3 --context 64 \
    --new-tokens 8 --steps 20 --baselines --out /tmp/o_$1 > $OUT/$1.log 2>&1
  echo "$1 rc=$? t=$SECONDS"; grep -h "megagen\b.*ms\|stopped\|gave up\|Error\|error:" $OUT/$1.log | grep -v "^W11" | head -4
}
one main_tiny "" tiny-qwen3 150
one main_1.7B "" Qwen3-1.7B 200
one old_tiny scratch/s18/trees/t7754 tiny-qwen3 150
one old_1.7B scratch/s18/trees/t7754 Qwen3-1.7B 200
cd $OUT && tar czf logs.tgz *.log && rm -f *.log
