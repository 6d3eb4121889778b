#!/bin/bash
# A/B: staged products as a loop (roll), the driver's record chain pipelined (ahead), against main; greedy, batch 1.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s20/call2.sh $OUT/
T=scratch/s20/trees
timeout 330 python3 benchmarks/ab.py --model Qwen3-0.6B --batch 1 --rounds 3 --passes 1 main=$T/main roll=$T/roll \
  ahead=$T/ahead > $OUT/ab_qwen.log 2>&1; echo "ab qwen rc=$? t=$SECONDS"; grep "|" $OUT/ab_qwen.log
find ~/.triton/cache -name "megakernel.cubin" -o -name "megakernel.json" | tar -czf $OUT/cubins.tgz -T -; tar -tzf $OUT/cubins.tgz | head
timeout $((575 - SECONDS)) python3 benchmarks/ab.py --model Llama-3.2-1B --batch 1 --rounds 3 --passes 1 main=$T/main \
  ahead=$T/ahead > $OUT/ab_llama.log 2>&1; echo "ab llama rc=$? t=$SECONDS"; grep "|" $OUT/ab_llama.log
