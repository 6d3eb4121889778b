#!/bin/bash
# Issue 14, call 4: the final tree (merge in o on by default where o stages, vectorised split loads):
# off (merge_in_o=False, the ticket merge) against on, in one process per model; GPU tests; decode_check.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s24/trees/final
for m in Qwen3-0.6B Qwen3-1.7B; do
  timeout 150 python3 benchmarks/ab.py --model $m --rounds 3 --passes 1 off=$T:merge_in_o=False on=$T > $OUT/ab_$m.log 2>> $OUT/err.log
  echo "ab $m rc=$? t=$SECONDS"; tail -4 $OUT/ab_$m.log
done
PYTHONPATH=$T timeout 100 python3 benchmarks/decode_check.py --presets Qwen3-0.6B --layers 4 --new-tokens 16 --steps 20 --skip-hf --out $OUT/decode_check.json > $OUT/decode_check.log 2>&1
echo "decode_check rc=$? t=$SECONDS"; grep -A3 "cosine_vs_fp32\|argmax_agreement\|tokens_equal" $OUT/decode_check.log | head -20
rm -rf /tmp/wtests && mkdir -p /tmp/wtests && cp -r $T/megagen /tmp/wtests/ && cp -r models /tmp/wtests/megagen/models && cp -r scratch/s24/tests /tmp/wtests/ && cp pyproject.toml /tmp/wtests/ && cp -r benchmarks /tmp/wtests/
(cd /tmp/wtests && PYTHONPATH=/tmp/wtests timeout $((585 - SECONDS)) python3 -m pytest -q tests/test_staging.py tests/test_gpu_compile.py tests/test_megakernel.py -k "not sampl" > $OUT/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -5 $OUT/gpu_tests.log)
