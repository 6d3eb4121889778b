#!/bin/bash
# Prepared in session 33 for session 34 (nvidia-h200-x2, ~9 min; carry [".whl"]): issue 14's H200 targets on main.
# Two H200s of one host: side by side, megagen bench at batch 1 of Qwen3-8B (GPU 0, beside the PDL baseline and
# torch.compile + CUDA graph; target <= 4.3 ms, 4.319 in session 32) and at batch 8 (GPU 1); then Qwen3-8B at tp=2
# over both, beside torch TP + NCCL + CUDA graph (target <= 2.6 ms; never measured on H200s since session 18; on two
# H100s 3.697 in session 29), with rank 0's profile (main 3bda8f2 saves its npz). Stops at once on H100s.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache NVSHMEM_DISABLE_NVLS=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $OUT/gpu.txt
grep -q H200 $OUT/gpu.txt || { echo "not H200s: stopping"; exit 0; }
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || echo "wheel failed"
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
cp scratch/s34/call2_h200x2.sh $OUT/
CUDA_VISIBLE_DEVICES=0 timeout 300 python3 -m megagen.bench --model Qwen3-8B --batch 1 --schedulers round_robin \
  --baselines ops_pdl_cuda_graph torch_compile_cuda_graph --out $OUT/b1_8b > $OUT/b1_8b.log 2>&1 &
CUDA_VISIBLE_DEVICES=1 timeout 300 python3 -m megagen.bench --model Qwen3-8B --batch 8 --schedulers round_robin \
  --baselines ops_pdl_cuda_graph torch_compile_cuda_graph --out $OUT/b8_8b > $OUT/b8_8b.log 2>&1 &
wait; echo "single-GPU benches done t=$SECONDS"
grep -A5 "^| system" $OUT/b1_8b/bench.md $OUT/b8_8b/bench.md
PYTHONPATH=/tmp/site timeout $((585 - SECONDS)) torchrun --nproc-per-node 2 -m megagen.bench_tp --model Qwen3-8B \
  --new-tokens 32 --baselines torch_tp_cuda_graph --profile --out $OUT/tp2 > $OUT/tp2.log 2>&1
echo "tp2 rc=$? t=$SECONDS"; grep -i "median_ms\|floor\|speedup" $OUT/tp2/*.json | head
rm -f $OUT/b*_8b/bench.png
(cd $OUT && tar czf all.tgz b*_8b tp2* && rm -rf b1_8b b8_8b tp2 tp2.log)
