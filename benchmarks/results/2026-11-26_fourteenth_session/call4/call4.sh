#!/bin/bash
# call 4 (2026-11-26, fourteenth session): main at a1d6ae4 (weights staged in shared memory): megagen bench, batch 1,
# greedy and sampling, beside torch.compile and the op-by-op PDL baseline; then a profile of Qwen3-0.6B's step
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s14/call4.sh $OUT/
timeout 420 python3 -m megagen.bench --model Qwen3-0.6B Llama-3.2-1B --batch 1 --schedulers round_robin \
  --baselines torch_compile_cuda_graph ops_pdl_cuda_graph --sample --out $OUT/bench > $OUT/bench.log 2>&1
echo "bench rc=$?"; rm -f $OUT/bench/bench.png
cat $OUT/bench/bench.md | head -30; echo "t=$SECONDS"
timeout $((590 - SECONDS)) python3 benchmarks/profile_decode.py --model Qwen3-0.6B --out /tmp/pq > $OUT/profile_qwen.log 2>&1
echo "profile rc=$?"; cp /tmp/pq/profile.npz $OUT/profile_qwen.npz; head -4 $OUT/profile_qwen.log; echo "t=$SECONDS"
