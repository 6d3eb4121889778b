#!/bin/bash
# call 1 (2026-11-26, ninth session): the attention's last split folding the new key/value into its last block
# (branch attention-new-key-in-block, 67fd505) against main, then its Qwen3-0.6B profile
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
for m in Qwen3-0.6B Llama-3.2-1B; do
  timeout 170 python3 benchmarks/ab.py --model $m --batch 1 --rounds 3 --passes 1 main newkv=scratch/s9/trees/newkv > $OUT/ab_newkv_$m.log 2>&1; echo "ab $m rc=$?"
  tail -4 $OUT/ab_newkv_$m.log
done
echo "t=$SECONDS"
left=$((585 - SECONDS))
R=$PWD; cd scratch/s9/trees/newkv && python3 -c "import megagen; print(megagen.__file__)" && PYTHONPATH=$PWD timeout $left python3 $R/benchmarks/profile_decode.py --model Qwen3-0.6B --out /tmp/pq > /tmp/pq.log 2>&1; echo "profile rc=$?"
cp /tmp/pq/waterfall.md $OUT/waterfall_Qwen3-0.6B_newkv.md; grep "decode step" /tmp/pq.log; tail -3 /tmp/pq.log; echo "t=$SECONDS"
