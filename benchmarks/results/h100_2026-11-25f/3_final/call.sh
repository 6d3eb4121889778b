#!/bin/bash
# the final tree: correctness on the GPU (decode_check, the reference and model tests, the spill budgets), and
# megagen beside the PDL baseline for Qwen3-0.6B at batch 1
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
timeout 100 python3 -m megagen.bench --model Qwen3-0.6B --batch 1 --schedulers round_robin --baselines ops_pdl_cuda_graph \
  --out $OUT/bench_q > $OUT/bench_q.log 2>&1; echo "bench rc=$?"; grep -A4 "^| system" $OUT/bench_q/bench.md
timeout 110 python3 benchmarks/decode_check.py --presets Qwen3-0.6B Llama-3.2-1B --new-tokens 32 --steps 20 --skip-hf \
  --out $OUT/decode_check.json 2>&1 | grep -v Warning > $OUT/decode_check.log; tail -8 $OUT/decode_check.log
timeout 270 python3 -m pytest -v -p no:cacheprovider -n 12 tests/test_reference.py tests/test_gpu_compile.py \
  tests/test_models.py > $OUT/pytest.log 2>&1; grep -E "FAILED|ERROR| passed| failed" $OUT/pytest.log | tail -8
