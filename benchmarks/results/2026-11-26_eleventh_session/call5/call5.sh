#!/bin/bash
# call 5 (2026-11-26, eleventh session): main at 3a1ae21 (acc8 and the sampling pick with fewer registers):
# what sampling costs over greedy (issue 15), a profile of Llama-3.2-1B, and two tiling options A/B'd on Llama-3.2-1B
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s11/call5.sh $OUT/
rm -f $OUT/bench_sample/bench.png
timeout 300 python3 -m megagen.bench --model Qwen3-0.6B Llama-3.2-1B --batch 1 --schedulers round_robin --baselines \
  --sample --out $OUT/bench_sample > $OUT/bench_sample.log 2>&1; echo "bench rc=$?"
rm -f $OUT/bench_sample/bench.png
grep -A6 "^| system" $OUT/bench_sample/bench.md; grep -i "sampl" $OUT/bench_sample/bench.md | head -5; echo "t=$SECONDS"
timeout 150 python3 benchmarks/profile_decode.py --model Llama-3.2-1B --out /tmp/pl > $OUT/profile_Llama-3.2-1B.log 2>&1; echo "profile rc=$?"
cp /tmp/pl/profile.npz $OUT/profile_Llama-3.2-1B.npz; sed -n 3,16p /tmp/pl/waterfall.md; echo "t=$SECONDS"
timeout $((590 - SECONDS)) python3 benchmarks/ab.py --model Llama-3.2-1B --batch 1 --rounds 3 --passes 1 main main_nolat:latency_tiles=False main_16x512:block_n=16,block_k=512 > $OUT/ab_b1_Llama-3.2-1B.log 2>&1; echo "ab rc=$?"
grep rounds $OUT/ab_b1_Llama-3.2-1B.log; echo "t=$SECONDS"
