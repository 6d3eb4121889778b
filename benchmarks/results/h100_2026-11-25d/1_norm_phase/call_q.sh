#!/bin/bash
# A/B at batch 8: RMSNorm as its own phase (norm_phase_min_batch) and batch weight-block rows, against main (HEAD tree)
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
M=$1; shift
BATCH=8 ROUNDS=5 timeout 420 python -m scratch.ab $M "$@" 2>&1 | grep -v Warning | tee $OUT/ab_$M.log
(cd scratch/base && BATCH=8 ROUNDS=5 timeout 150 python -m scratch.ab $M main: 2>&1 | grep -v Warning | tee $OUT/ab_${M}_base.log)
