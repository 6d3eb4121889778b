#!/bin/bash
# Session 31, call 3 (asked for nvidia-h200): issue 16's whole-model run of Qwen3-30B-A3B with the tree of branch
# router-in-o-wave merged with main (e902f84, tree owm): megagen bench beside HF static cache + CUDA graph and the
# PDL op-by-op baseline, then decode_check on the whole model (128 tokens), then torch.compile + CUDA graph in a
# second bench process with the time left.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s31/call3.sh $OUT/
R=$PWD; T=$R/scratch/s31/trees/owm
(cd /tmp && PYTHONPATH=$T python3 -c "import megagen; print(megagen.__file__)") | tee $OUT/which.txt
(cd /tmp && PYTHONPATH=$T timeout 280 python3 -m megagen.bench --model Qwen3-30B-A3B --batch 1 --schedulers round_robin \
  --baselines hf_static_cuda_graph ops_pdl_cuda_graph --out $OUT/bench_hf > $OUT/bench_hf.log 2>&1); echo "bench hf rc=$? t=$SECONDS"
grep -A6 "^| system" $OUT/bench_hf/bench.md
PYTHONPATH=$T timeout $((585 - SECONDS)) python3 benchmarks/decode_check.py --presets Qwen3-30B-A3B --new-tokens 128 --steps 50 --skip-hf --out $OUT/check.json > $OUT/check.log 2>&1
echo "check rc=$? t=$SECONDS"; grep -E -A3 '"cosine_vs_hf_bf16"|argmax_agreement_vs_hf|tokens_equal|"median_ms"|fraction_of_floor' $OUT/check.log | head -20
if [ $SECONDS -lt 300 ]; then
(cd /tmp && PYTHONPATH=$T timeout $((585 - SECONDS)) python3 -m megagen.bench --model Qwen3-30B-A3B --batch 1 --schedulers round_robin \
  --baselines torch_compile_cuda_graph --out $OUT/bench_tc > $OUT/bench_tc.log 2>&1); echo "bench tc rc=$? t=$SECONDS"
grep -A6 "^| system" $OUT/bench_tc/bench.md
fi
rm -f $OUT/bench_*/bench.png
