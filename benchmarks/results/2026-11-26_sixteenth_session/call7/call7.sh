#!/bin/bash
# call 7 (2026-11-26, sixteenth session): main at 1513116 (attention splits by bytes, the combine's marks): GPU tests,
# and decode_check of Llama-3.2-1B (now 8 attention splits at context 512) and Qwen3-0.6B.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s16/call7.sh $OUT/
timeout 250 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_models.py tests/test_staging.py \
  tests/test_profiler.py tests/test_megakernel.py > $OUT/pytest_gpu.log 2>&1; echo "pytest rc=$?"
tail -3 $OUT/pytest_gpu.log | cut -c1-300; echo "t=$SECONDS"
timeout $((560 - SECONDS)) python3 benchmarks/decode_check.py --presets Llama-3.2-1B Qwen3-0.6B --layers 4 \
  --new-tokens 16 --skip-hf --out $OUT/check.json > $OUT/check.log 2>&1; echo "check rc=$?"
grep -E "preset|cosine|min|argmax|tokens_equal" $OUT/check.log | head -30; echo "t=$SECONDS"
