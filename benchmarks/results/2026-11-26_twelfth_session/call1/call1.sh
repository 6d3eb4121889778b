#!/bin/bash
# call 1 (2026-11-26, twelfth session): where the sampling step's time goes on main (1ab2318): profiles of
# Qwen3-0.6B greedy and sampling, and Llama-3.2-1B sampling, on one machine
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s12/call1.sh $OUT/
run() {  # name, model, extra args
  timeout $((590 - SECONDS)) python3 benchmarks/profile_decode.py --model $2 --out /tmp/p_$1 ${@:3} > $OUT/profile_$1.log 2>&1; echo "profile $1 rc=$?"
  cp /tmp/p_$1/profile.npz $OUT/profile_$1.npz; cp /tmp/p_$1/waterfall.md $OUT/waterfall_$1.md; tail -14 /tmp/p_$1/waterfall.md | head -3; echo "t=$SECONDS"
}
run qwen_sample Qwen3-0.6B --sample
run qwen_greedy Qwen3-0.6B
run llama_sample Llama-3.2-1B --sample
