#!/bin/bash
# call 6 (2026-11-26, ninth session): the committed tree (e6afd85): GPU tests, decode_check, megagen beside
# torch.compile and the PDL baseline at batch 1
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
timeout 220 python3 -m pytest -v -p no:cacheprovider -n 12 tests/test_reference.py tests/test_gpu_compile.py \
  tests/test_models.py > $OUT/pytest.log 2>&1 &
timeout 170 python3 benchmarks/decode_check.py --presets Qwen3-0.6B --new-tokens 32 --steps 20 --skip-hf \
  --out $OUT/decode_check.json > /tmp/dc.log 2>&1; echo "decode_check rc=$?"; grep -v Warning /tmp/dc.log | tail -6
wait; grep -E "FAILED|ERROR| passed| failed" $OUT/pytest.log | tail -8; echo "t=$SECONDS"
left=$((590 - SECONDS))
timeout $left python3 -m megagen.bench --model Qwen3-0.6B Llama-3.2-1B --batch 1 --schedulers round_robin \
  --baselines ops_pdl_cuda_graph torch_compile_cuda_graph --out $OUT/bench_b1 > $OUT/bench_b1.log 2>&1; echo "bench rc=$?"
grep -A6 "^| system" $OUT/bench_b1/bench.md; echo "t=$SECONDS"
