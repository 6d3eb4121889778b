#!/bin/bash
# call 4 (2026-11-26): the committed tree (32 x 256 batch-1 blocks up to a hidden size of 2048): GPU tests and
# decode_check side by side, then megagen beside the PDL baseline at batch 1, then Qwen3-8B with 32 x 256 blocks
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
timeout 250 python3 -m pytest -v -p no:cacheprovider -n 12 tests/test_reference.py tests/test_gpu_compile.py \
  tests/test_models.py > $OUT/pytest.log 2>&1 &
timeout 150 python3 benchmarks/decode_check.py --presets Qwen3-0.6B Llama-3.2-1B --new-tokens 32 --steps 20 --skip-hf \
  --out $OUT/decode_check.json > /tmp/dc.log 2>&1; echo "decode_check rc=$?"; grep -v Warning /tmp/dc.log | tail -8
wait; grep -E "FAILED|ERROR| passed| failed" $OUT/pytest.log | tail -8; echo "t=$SECONDS"
timeout 170 python3 -m megagen.bench --model Qwen3-0.6B Llama-3.2-1B --batch 1 --schedulers round_robin \
  --baselines ops_pdl_cuda_graph --out /tmp/bench_b1 > $OUT/bench_b1.log 2>&1; echo "bench rc=$?"
cp /tmp/bench_b1/bench.json $OUT/bench_b1.json 2>/dev/null; cp /tmp/bench_b1/bench.md $OUT/bench_b1.md 2>/dev/null
grep -A8 "^| system" /tmp/bench_b1/bench.md; echo "t=$SECONDS"
left=$((575 - SECONDS))
if [ $left -gt 60 ]; then
  timeout $left python3 benchmarks/ab.py --model Qwen3-8B --batch 1 --rounds 3 --passes 1 default narrow:block_n=32,block_k=256 \
    > $OUT/ab_qwen3_8b.log 2>&1; echo "ab 8B rc=$?"; tail -4 $OUT/ab_qwen3_8b.log
fi
