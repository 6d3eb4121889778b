#!/bin/bash
# call 2 (2026-11-26, eleventh session): GEMV tiles that load their weight blocks in groups (g4: up to 4 blocks at
# batch 1, g3: up to 3; 2 for a batch) against main (73dd18f), batch 1 and 8
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s11/call2.sh $OUT/
T=scratch/s11/trees2
for m in Qwen3-0.6B Llama-3.2-1B; do
  timeout 170 python3 benchmarks/ab.py --model $m --batch 1 --rounds 3 --passes 1 main=$T/main g4=$T/g4 g3=$T/g3 > $OUT/ab_b1_$m.log 2>&1; echo "ab b1 $m rc=$?"
  tail -5 $OUT/ab_b1_$m.log; echo "t=$SECONDS"
done
for m in Llama-3.2-1B Qwen3-0.6B; do
  timeout $((595 - SECONDS)) python3 benchmarks/ab.py --model $m --batch 8 --rounds 3 --passes 1 main=$T/main g4=$T/g4 > $OUT/ab_b8_$m.log 2>&1; echo "ab b8 $m rc=$?"
  tail -4 $OUT/ab_b8_$m.log; echo "t=$SECONDS"
done
