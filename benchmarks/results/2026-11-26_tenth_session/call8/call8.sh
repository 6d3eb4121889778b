#!/bin/bash
# call 8 (2026-11-26, tenth session): what sampling costs over greedy decoding on the tree with tile marks (e1ed60f)
# (issue 15): megagen only, batch 1, each model greedy and drawing with temperature 0.7, top_k 50, top_p 0.9
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s10/call8.sh $OUT/
timeout 400 python3 -m megagen.bench --model Qwen3-0.6B Llama-3.2-1B --batch 1 --schedulers round_robin --baselines \
  --sample --out $OUT/bench_sample > $OUT/bench_sample.log 2>&1; echo "bench rc=$?"
grep -A6 "^| system" $OUT/bench_sample/bench.md; grep -i "sampl" $OUT/bench_sample/bench.md | head -5; echo "t=$SECONDS"
