#!/bin/bash
# A/B, main (b79cd56) against the final tree (8dac454): Qwen3-1.7B at batch 1 (staged), Llama-3.2-1B at batch 8.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s20/call6.sh $OUT/
T=scratch/s20/trees
timeout 300 python3 benchmarks/ab.py --model Qwen3-1.7B --batch 1 --rounds 3 --passes 1 main=$T/main final=$T/final \
  > $OUT/ab_qwen17.log 2>&1; echo "ab qwen1.7 rc=$? t=$SECONDS"; grep "|" $OUT/ab_qwen17.log
timeout $((570 - SECONDS)) python3 benchmarks/ab.py --model Llama-3.2-1B --batch 8 --rounds 3 --passes 1 main=$T/main \
  final=$T/final > $OUT/ab_llama_b8.log 2>&1; echo "ab llama b8 rc=$? t=$SECONDS"; grep "|" $OUT/ab_llama_b8.log
