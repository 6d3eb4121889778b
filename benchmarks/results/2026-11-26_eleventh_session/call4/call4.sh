#!/bin/bash
# call 4 (2026-11-26, eleventh session): acc8 (batch-1 GEMV blocks as int32 pairs, row sums of 8 products) against
# main (73dd18f) with 2 CTAs an SM, and acc8 with 3 CTAs an SM under a 168-register cap (acc8r: + maxnreg.patch);
# a profile of acc8 (Qwen3-0.6B), decode_check of acc8 (Qwen3-0.6B, Llama-3.2-1B)
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s11/call4.sh $OUT/
M=scratch/s11/trees2/main; A=scratch/s11/trees3/acc8; R=scratch/s11/trees3/acc8r
for m in Qwen3-0.6B Llama-3.2-1B; do
  timeout 200 python3 benchmarks/ab.py --model $m --batch 1 --rounds 3 --passes 1 main=$M acc8=$A acc8r396=$R:num_ctas=396,max_registers=168 > $OUT/ab_b1_$m.log 2>&1; echo "ab b1 $m rc=$?"
  grep rounds $OUT/ab_b1_$m.log; echo "t=$SECONDS"
done
PYTHONPATH=$A timeout 150 python3 benchmarks/profile_decode.py --model Qwen3-0.6B --out /tmp/pq > $OUT/profile_acc8_Qwen3-0.6B.log 2>&1; echo "profile rc=$?"
cp /tmp/pq/profile.npz $OUT/profile_acc8_Qwen3-0.6B.npz; grep -A8 "Inside the tiles" /tmp/pq/waterfall.md | tail -7; echo "t=$SECONDS"
PYTHONPATH=$A timeout $((590 - SECONDS)) python3 benchmarks/decode_check.py --presets Qwen3-0.6B Llama-3.2-1B --new-tokens 32 --steps 20 --skip-hf > $OUT/decode_check_acc8.log 2>&1; echo "decode_check rc=$?"; tail -8 $OUT/decode_check_acc8.log; echo "t=$SECONDS"
