#!/usr/bin/env bash
# Call 5 (H100): GPU tests of the changed paths, then batch 8 A/B: main 7f882ad (scratch/base) against the working tree.
set -u
R=$OUT/r; mkdir -p $R
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache ROUNDS=4
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
START=$(date +%s)
el() { echo "[$(( $(date +%s) - START )) s] $*"; }
timeout 200 python3 -m pytest -v -p no:cacheprovider -n 6 tests/test_models.py tests/test_gpu_compile.py -k "bfloat16 or split or spill" > $R/pytest.log 2>&1
grep -E "PASSED|FAILED|ERROR| passed| failed" $R/pytest.log | tail -12; el tests
ab() { # model batch tree
  if [ $(( $(date +%s) - START )) -gt 470 ]; then el skip $*; return; fi
  if [ $3 = base ]; then d=scratch/base; else d=.; fi
  (cd $d && BATCH=$2 timeout 120 python3 -m scratch.ab $1 $3: 2>&1 | grep -v Warn | grep -E "b$2 $3:|built|Error|error" | tee -a $R/ab.log); el $*; }
ab Llama-3.2-1B 8 base; ab Llama-3.2-1B 8 new; ab Qwen3-0.6B 8 base; ab Qwen3-0.6B 8 new
