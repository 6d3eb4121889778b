#!/usr/bin/env bash
# Call 5: the committed tree. megagen with fuse_mlp=False and with the default (fused) alternating, megagen only;
# then the bench with torch.compile + CUDA graph and the PDL baseline.
set -u
R=$OUT/r; mkdir -p $R
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv | tee $R/gpu.txt; git rev-parse HEAD >> $R/gpu.txt
START=$(date +%s)
el() { echo "[$(( $(date +%s) - START )) s] $*"; }
M="python3 -m megagen.bench --model Qwen3-0.6B Llama-3.2-1B --schedulers round_robin"
timeout 100 $M --baselines --option fuse_mlp=False --out $R/two_a > $R/two_a.log 2>&1; el two_a rc=$?
timeout 100 $M --baselines --out $R/fused_a > $R/fused_a.log 2>&1; el fused_a rc=$?
timeout 400 $M --baselines torch_compile_cuda_graph ops_pdl_cuda_graph --out $R/bench > $R/bench.log 2>&1; el bench rc=$?
grep -h "|" $R/two_a/bench.md $R/fused_a/bench.md $R/bench/bench.md | grep -v "^|---" > $R/summary.txt
cat $R/summary.txt
tar -czf $OUT/results.tar.gz -C $R .
