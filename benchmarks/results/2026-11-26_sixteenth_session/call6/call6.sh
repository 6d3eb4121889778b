#!/bin/bash
# call 6 (2026-11-26, sixteenth session): the landing tree; attention splits of 64 keys (8 splits at context 512)
# against the default 32 (16 splits), both models, a second machine after call 1 (Llama-3.2-1B: 1.0890 / 1.0822).
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s16/call6.sh $OUT/
T=scratch/s16/trees/land
for M in Llama-3.2-1B Qwen3-0.6B; do
  timeout 230 python3 benchmarks/ab.py --model $M --batch 1 --rounds 4 --passes 1 k32=$T k64=$T:attention_split_keys=64 \
    > $OUT/ab_$M.log 2>&1; echo "ab $M rc=$?"; grep "rounds\||" $OUT/ab_$M.log | tail -6; echo "t=$SECONDS"
done
