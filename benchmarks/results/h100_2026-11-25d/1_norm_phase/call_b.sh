#!/bin/bash
# norm phase at batch 1 and 2: norm_phase_min_batch=1 / 99 against the default
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
BATCH=1 ROUNDS=5 timeout 200 python -m scratch.ab Qwen3-0.6B default: norm:norm_phase_min_batch=1 2>&1 | grep -v Warning | tee $OUT/ab_b1_qwen.log
BATCH=1 ROUNDS=5 timeout 200 python -m scratch.ab Llama-3.2-1B default: norm:norm_phase_min_batch=1 2>&1 | grep -v Warning | tee $OUT/ab_b1_llama.log
BATCH=2 ROUNDS=5 timeout 180 python -m scratch.ab Llama-3.2-1B default: off:norm_phase_min_batch=3 2>&1 | grep -v Warning | tee $OUT/ab_b2_llama.log
