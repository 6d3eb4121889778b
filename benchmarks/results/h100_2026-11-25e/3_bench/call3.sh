#!/bin/bash
# megagen bench (asked for kind nvidia-h200; the tool kept the H100 this session held, so it ran on that H100) beside torch.compile + CUDA graph and the PDL baseline, the tree of d9150c4
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee $OUT/gpu.txt
B="--schedulers round_robin --baselines torch_compile_cuda_graph ops_pdl_cuda_graph"
run() {  # name timeout args...
  n=$1; t=$2; shift 2
  timeout $t python3 -m megagen.bench "$@" $B --out $OUT/r/$n > $OUT/r/$n.log 2>&1; echo "$n rc=$?"
  grep -A6 "^| system" $OUT/r/$n/bench.md 2>/dev/null
}
mkdir -p $OUT/r
run b1_qwen3_8b 200 --model Qwen3-8B --batch 1
run b8_llama 150 --model Llama-3.2-1B --batch 8
run b1_small 200 --model Qwen3-0.6B Llama-3.2-1B --batch 1
tar -czf $OUT/results.tar.gz -C $OUT/r .
