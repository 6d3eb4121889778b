#!/usr/bin/env bash
# One device-tool call for decode speed work: megagen bench beside the baselines, A/B runs of build
# options in the same session, and profiled steps with their per-layer waterfalls.
#   OUT=dir MODELS="Qwen3-0.6B Llama-3.2-1B" AB="max_tile_rows=16" STAGES="bench ab profile" bash benchmarks/decode_perf.sh
# PROFILE_OPTIONS="default max_attention_splits=8" profiles each model once per build option (BATCH applies too).
# Everything lands in $OUT/results.tar.gz (the device tool returns few files); a digest is printed last.
set -u
OUT=${OUT:-perf_out}; mkdir -p "$OUT/r"
MODELS=${MODELS:-"Qwen3-0.6B Llama-3.2-1B"}
BASELINES=${BASELINES:-"torch_compile_cuda_graph ops_pdl_cuda_graph"}
BATCH=${BATCH:-1}
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . || exit 1  # megagen (megagen.models included), offline
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/r/gpu.txt"
git rev-parse HEAD 2>/dev/null | tee -a "$OUT/r/gpu.txt"
for stage in ${STAGES:-bench ab profile}; do
  case $stage in
    bench)
      timeout "${BENCH_TIMEOUT:-400}" python3 -m megagen.bench --model $MODELS --batch "$BATCH" --schedulers round_robin \
        --baselines $BASELINES --out "$OUT/r/bench" >"$OUT/r/bench.log" 2>&1
      echo "bench rc=$?" ;;
    ab)
      for opt in ${AB:-}; do
        timeout 200 python3 -m megagen.bench --model $MODELS --batch "$BATCH" --schedulers round_robin --baselines \
          --option "$opt" --out "$OUT/r/ab_$opt" >"$OUT/r/ab_$opt.log" 2>&1
        echo "ab $opt rc=$?"
      done ;;
    profile)
      for m in $MODELS; do
        for opt in ${PROFILE_OPTIONS:-default}; do  # "default": the build's defaults
          name=profile_$m; args=()
          [ "$opt" != default ] && { name=${name}_$opt; args=(--option "$opt"); }
          timeout 200 python3 benchmarks/profile_decode.py --model "$m" --batch "$BATCH" "${args[@]}" --out "$OUT/r/$name" \
            >"$OUT/r/$name.log" 2>&1
          echo "profile $m $opt rc=$?"
        done
      done ;;
  esac
done
tar -czf "$OUT/results.tar.gz" -C "$OUT/r" .
for f in "$OUT"/r/bench/bench.md "$OUT"/r/ab_*/bench.md "$OUT"/r/profile_*/waterfall.md; do
  [ -f "$f" ] && { echo "== $f"; grep -v '^$' "$f" | grep -v '^- combined'; }
done
