#!/bin/bash
# call 5 (2026-11-26, eighth session): waterfalls of the committed tree and each phase's library bound beside them
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
for m in Llama-3.2-1B Qwen3-0.6B; do
  timeout 200 python3 benchmarks/profile_decode.py --model $m --out /tmp/p_$m > /tmp/p_$m.log 2>&1; echo "profile $m rc=$?"
  cp /tmp/p_$m/waterfall.md $OUT/waterfall_$m.md; grep "decode step" /tmp/p_$m.log
  timeout 60 python3 benchmarks/phase_bounds.py --model $m --waterfall /tmp/p_$m/waterfall.md \
    --out $OUT/phase_bounds_$m.md > /tmp/pb_$m.log 2>&1; echo "bounds $m rc=$?"; tail -10 $OUT/phase_bounds_$m.md
done
