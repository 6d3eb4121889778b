#!/bin/bash
# H100: megagen bench beside torch.compile + CUDA graph and the PDL baseline for the models and batches not yet
# measured on this tree (d9150c4): Qwen3-1.7B at batch 1 and 8, Qwen3-8B at batch 8
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee $OUT/gpu.txt
B="--schedulers round_robin --baselines torch_compile_cuda_graph ops_pdl_cuda_graph"
mkdir -p $OUT/r
run() {  # name timeout args...
  n=$1; t=$2; shift 2
  timeout $t python3 -m megagen.bench "$@" $B --out $OUT/r/$n > $OUT/r/$n.log 2>&1; echo "$n rc=$?"
  grep -A6 "^| system" $OUT/r/$n/bench.md 2>/dev/null
  tar -czf $OUT/results.tar.gz -C $OUT/r .
}
run b1_qwen3_1.7b 170 --model Qwen3-1.7B --batch 1
run b8_qwen3_1.7b 170 --model Qwen3-1.7B --batch 8
run b8_qwen3_8b 230 --model Qwen3-8B --batch 8
