#!/bin/bash
# call 1 (2026-11-26, fourteenth session): weights staged in shared memory (branch stage) -- correctness against
# HuggingFace on the first 4 layers, then A/B main / stage tree with staging off / stage tree, greedy, batch 1
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s14/call1.sh $OUT/
T=scratch/s14/trees
PYTHONPATH=$T/stage timeout 150 python3 benchmarks/decode_check.py --presets Qwen3-0.6B Llama-3.2-1B --layers 4 \
  --new-tokens 16 --steps 20 --skip-hf --out $OUT/check_stage.json > $OUT/check_stage.log 2>&1; rc=$?
echo "check rc=$rc t=$SECONDS"; tail -25 $OUT/check_stage.log
if [ $rc -ne 0 ]; then exit 1; fi
for m in Qwen3-0.6B Llama-3.2-1B; do
  timeout 210 python3 benchmarks/ab.py --model $m --batch 1 --rounds 3 --passes 1 main=$T/main \
    nostage=$T/stage:stage_weights=False stage=$T/stage > $OUT/ab_$m.log 2>&1; echo "ab $m rc=$?"
  grep -i "rounds\||" $OUT/ab_$m.log | tail -8; echo "t=$SECONDS"
done
