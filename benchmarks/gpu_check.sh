#!/usr/bin/env bash
# One device-tool call: the core microbenchmarks, then the test suite compiled on the GPU.
#   bash benchmarks/gpu_check.sh            (logs and JSON go to $OUT, or ./gpu_out without it)
# SKIP_TESTS=1 / SKIP_BENCH=1 leave a part out; BENCH_ARGS is passed to core_microbench.py; TEST_WORKERS (8) pytest workers.
set -u
OUT=${OUT:-gpu_out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . || exit 1  # megagen (megagen.models included), offline
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
python3 -c "import torch, triton, numpy; print('torch', torch.__version__, 'triton', triton.__version__, 'numpy', numpy.__version__)" | tee -a "$OUT/gpu.txt"
if [ "${SKIP_BENCH:-0}" != 1 ]; then
  timeout "${BENCH_TIMEOUT:-300}" python3 benchmarks/core_microbench.py --out "$OUT/core_microbench.json" ${BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.log"
fi
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  # -v: every test's outcome is logged as it finishes, so a run cut short by the timeout still names its failures
  timeout "${TEST_TIMEOUT:-600}" python3 -m pytest -v -p no:cacheprovider -n "${TEST_WORKERS:-8}" tests > "$OUT/pytest.log" 2>&1
  grep -E "FAILED|ERROR| passed| failed" "$OUT/pytest.log" | tail -25
fi
