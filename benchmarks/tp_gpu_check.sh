#!/usr/bin/env bash
# Tensor parallelism on a multi-GPU machine (nvidia-h200-x2 / -x4): NVSHMEM from the carried wheel, then
#   STAGE=probe  : NVSHMEM starts; allreduce tasks across each of TPS ranks, checked and timed against NCCL
#   STAGE=sanity : tiny-qwen3 at tp=1 and tp=2 (a quick end-to-end check of the torchrun + NVSHMEM path)
#   STAGE=ref    : MODEL at tp=1, saving its tokens and logits as the reference
#   STAGE=tp     : MODEL at each of TPS, compared with the reference, timed against torch TP + NCCL (+ CUDA graph);
#                  the last of TPS also profiled
#   STAGE=sweep  : MODEL at the last of TPS under the defaults and under each of SWEEP's arguments (timing only)
#   STAGE=pytest : the test suite on the GPU (benchmarks/gpu_check.sh without its microbenchmarks)
# Usage (repo root, .whl/ holding nvshmem4py-cu13): OUT=dir STAGES="sanity ref tp" TPS="2 4" bash benchmarks/tp_gpu_check.sh
# Results go to $OUT, step logs to $LOGS (printed when a step fails).
set -uo pipefail
OUT=${OUT:-/tmp/tp_out}
MODEL=${MODEL:-Qwen3-8B}
STAGES=${STAGES:-"sanity ref tp"}
TPS=${TPS:-"2 4"}
REF=${REF:-/tmp/megagen_tp_ref.pt}
LOGS=${LOGS:-/tmp/megagen_tp_logs}
mkdir -p "$OUT" "$LOGS"
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site MEGAGEN_CACHE_DIR=/tmp/megagen_cache NVSHMEM_DISABLE_NVLS=1
python3 -m pip install -q --no-deps --no-build-isolation -e . || exit 1  # megagen (megagen.models included), offline
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader

attempt() {  # name, timeout, command...: a log per step; returns the step's exit status
  local name=$1 limit=$2; shift 2
  echo "== $name: $*"
  local t0=$SECONDS
  timeout "$limit" "$@" >"$LOGS/$name.log" 2>&1
  local rc=$?
  echo "   rc=$rc in $((SECONDS - t0)) s"
  grep -v "^W11\|warn" "$LOGS/$name.log" | tail -4
  return $rc
}

run() {  # as attempt, but stop the script when the step fails
  attempt "$@" || { grep -v "^W11" "$LOGS/$1.log" | tail -60; exit 1; }
}

for stage in $STAGES; do
  case $stage in
    probe)
      for tp in $TPS; do
        run "probe_tp$tp" 180 torchrun --nproc-per-node "$tp" benchmarks/allreduce_probe.py --out "$OUT"
      done ;;
    sanity)
      run sanity_tp1 180 python3 -m megagen.bench_tp --model tiny-qwen3 --context 16 --new-tokens 8 --steps 20 \
          --baselines --save-reference /tmp/tiny_ref.pt --out "$LOGS/sanity"
      run sanity_tp2 240 torchrun --nproc-per-node 2 -m megagen.bench_tp --model tiny-qwen3 --context 16 \
          --new-tokens 8 --steps 20 --reference /tmp/tiny_ref.pt --out "$LOGS/sanity" ;;
    ref)
      run "ref_tp1" 300 python3 -m megagen.bench_tp --model "$MODEL" --baselines --save-reference "$REF" \
          --out "$OUT" ;;
    tp)
      last=${TPS##* }
      for tp in $TPS; do
        run "tp$tp" 420 torchrun --nproc-per-node "$tp" -m megagen.bench_tp --model "$MODEL" --reference "$REF" \
            --out "$OUT" $([ "$tp" = "$last" ] && echo --profile)
      done ;;
    sweep)
      tp=${TPS##* }
      for arg in defaults ${SWEEP:-}; do
        run "sweep_tp${tp}_${arg//[^a-z0-9_]/}" 240 torchrun --nproc-per-node "$tp" -m megagen.bench_tp \
            --model "$MODEL" --new-tokens 8 --baselines --out "$OUT" $([ "$arg" != defaults ] && echo "$arg")
      done ;;
    pytest)
      SKIP_BENCH=1 OUT="$OUT" TEST_TIMEOUT=280 bash benchmarks/gpu_check.sh | tail -8 ;;
  esac
done
