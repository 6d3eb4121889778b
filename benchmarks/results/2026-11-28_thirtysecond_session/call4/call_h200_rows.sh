#!/bin/bash
# Prepared in session 31 for session 32 (nvidia-h200; the H200 came at once in session 31's call 3): issue 14's
# H200 rows, last measured in the seventeenth session (Qwen3-8B at batch 1: 4.464 ms against the 4.3 asked).
# main's megagen beside the PDL op-by-op and torch.compile baselines, one process a row, the batch-1 rows first.
# run: bash scratch/s32/call_h200_rows.sh (no carry needed: main's tree is the working tree). A cold machine
# compiles for a while: rows past the call's time are left for another call (see which logs are missing).
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s32/call_h200_rows.sh $OUT/
for row in "Qwen3-8B 1" "Llama-3.2-1B 1" "Qwen3-0.6B 1" "Qwen3-1.7B 1"; do
  set -- $row; left=$((585 - SECONDS)); [ $left -lt 90 ] && break
  (cd /tmp && timeout $left python3 -m megagen.bench --model $1 --batch $2 --schedulers round_robin \
    --baselines ops_pdl_cuda_graph torch_compile_cuda_graph --out $OUT/b$2_$1 > $OUT/b$2_$1.log 2>&1)
  echo "$1 b$2 rc=$? t=$SECONDS"; grep -A5 "^| system" $OUT/b$2_$1/bench.md 2>/dev/null
  rm -f $OUT/b$2_$1/bench.png
done
cd $OUT && tar czf rows.tgz b*_* && rm -rf b*_*/
