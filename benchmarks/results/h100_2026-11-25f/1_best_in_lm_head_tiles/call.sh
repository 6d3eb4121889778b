#!/bin/bash
# A/B: lm_head tiles that keep their best logit, one wave of them (new) against main's lm_head in 128-row tiles and
# an argmax phase (old = main a835dd5 as scratch/old); processes alternate old, new (old, new)
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
ab() {  # model batch rounds passes
  for r in $(seq $4); do
    for tree in old new; do
      pp=""; [ $tree = old ] && pp=$PWD/scratch/old
      PYTHONPATH=$pp BATCH=$2 ROUNDS=$3 timeout 150 python3 scratch/ab.py $1 $tree: 2>&1 | grep -v Warning \
        | tee -a $OUT/ab_b$2_$1.log | grep "median\|from\|Error"
    done
  done
}
ab Qwen3-0.6B 1 3 2
ab Llama-3.2-1B 1 3 1
ab Qwen3-0.6B 8 3 1
ab Llama-3.2-1B 8 3 1
