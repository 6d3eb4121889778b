#!/usr/bin/env bash
# Call 3 (H100): q/k/v split-K at batch > 1 (working tree) against main (scratch/base = git archive HEAD), alternating processes.
set -u
R=$OUT/r; mkdir -p $R
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache ROUNDS=4
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
START=$(date +%s)
el() { echo "[$(( $(date +%s) - START )) s] $*"; }
ab() { # model batch tree
  if [ $(( $(date +%s) - START )) -gt 520 ]; then el skip $*; return; fi
  if [ $3 = base ]; then d=scratch/base; else d=.; fi
  (cd $d && BATCH=$2 timeout 150 python3 -m scratch.ab $1 $3: 2>&1 | grep -v Warn | grep -E "b$2 $3:|built|Error|error" | tee -a $R/ab.log); el $*; }
for cfg in "Qwen3-0.6B 8" "Llama-3.2-1B 8" "Llama-3.2-1B 1"; do
  ab $cfg base; ab $cfg new; ab $cfg base; ab $cfg new
done
grep median $R/ab.log > $R/summary.txt
