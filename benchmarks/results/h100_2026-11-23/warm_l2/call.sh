#!/usr/bin/env bash
# L2 warming while a task waits: warm_bytes 0 (off) / 64 KiB (default) / 256 KiB, batch 1 and 8, one machine.
set -u
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
mkdir -p $OUT/logs
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/logs/gpu.txt
run() {  # tag model batch warm_bytes
  timeout 150 python3 -m megagen.bench --model $2 --batch $3 --schedulers round_robin --baselines --option warm_bytes=$4 --out $OUT/$1 > $OUT/logs/$1.log 2>&1
  echo "$1 $(grep '| megagen_round_robin' $OUT/$1/bench.md | cut -d'|' -f3)" | tee -a $OUT/logs/summary.txt
  (cd $OUT && tar czf all.tgz logs q* l* p* 2>/dev/null)
}
run q1_w64k Qwen3-0.6B 1 65536
run q1_w0 Qwen3-0.6B 1 0
run l1_w64k Llama-3.2-1B 1 65536
run l1_w0 Llama-3.2-1B 1 0
run q1_w256k Qwen3-0.6B 1 262144
run l1_w256k Llama-3.2-1B 1 262144
run l8_w64k Llama-3.2-1B 8 65536
run l8_w0 Llama-3.2-1B 8 0
timeout 100 python3 benchmarks/profile_decode.py --model Llama-3.2-1B --out $OUT/p_l1_w64k > $OUT/logs/p_l1_w64k.log 2>&1
(cd $OUT && tar czf all.tgz logs q* l* p* 2>/dev/null)
cat $OUT/logs/summary.txt
