#!/bin/bash
# Session 34, call D (nvidia-h200; main 9e46716, the working tree): correctness on the GPU of Tiling.whole_row_blocks.
# decode_check of Qwen3-1.7B (gate/up 48-row tiles: 16 x 512 blocks now) with and without the rule, then the test
# files that build decode steps (models, staging, GPU compile, tp) on the GPU with the time left.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s34/callD_h200.sh $OUT/
for v in whole main_tiling; do
  opt=""; [ $v = main_tiling ] && opt="--option whole_row_blocks=False"
  timeout 150 python3 benchmarks/decode_check.py --presets Qwen3-1.7B --new-tokens 32 --steps 20 --skip-hf $opt \
    --out $OUT/dc_$v > $OUT/dc_$v.log 2>&1
  echo "decode_check $v rc=$? t=$SECONDS"; grep -i "cos\|argmax\|agree" $OUT/dc_$v.log | tail -4
done
timeout $((500 - SECONDS)) python3 -m pytest -v -p no:cacheprovider -n 14 tests/test_models.py tests/test_staging.py \
  tests/test_gpu_compile.py > $OUT/pytest.log 2>&1
echo "pytest rc=$? t=$SECONDS"; grep -E "FAILED|ERROR| passed| failed" $OUT/pytest.log | tail -15
(cd $OUT && tar czf all.tgz dc_* pytest.log && rm -rf dc_*)
