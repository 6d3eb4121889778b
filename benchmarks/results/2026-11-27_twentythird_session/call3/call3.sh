#!/bin/bash
# Issue 14: main (e361029) against the landed ticket merge (land, 4ad58b8): Qwen3-0.6B and Llama-3.2-1B greedy,
# Qwen3-0.6B sampling; decode_check on land; GPU tests of land (tickets, op launches, models).
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s23/trees
for m in Qwen3-0.6B Llama-3.2-1B; do
  timeout 200 python3 benchmarks/ab.py --model $m --rounds 3 --passes 1 main=$T/main land=$T/land > $OUT/ab_$m.log 2>> $OUT/ab.err
  echo "ab $m rc=$? t=$SECONDS"; tail -3 $OUT/ab_$m.log
done
timeout 200 python3 benchmarks/ab.py --model Qwen3-0.6B --sample --rounds 3 --passes 1 main=$T/main land=$T/land > $OUT/ab_sample.log 2>> $OUT/ab.err
echo "ab sample rc=$? t=$SECONDS"; tail -3 $OUT/ab_sample.log
PYTHONPATH=$T/land timeout 120 python3 benchmarks/decode_check.py --presets Qwen3-0.6B Llama-3.2-1B --layers 4 --new-tokens 16 --steps 20 --skip-hf --out $OUT/decode_check.json > $OUT/decode_check.log 2>&1; echo "check rc=$? t=$SECONDS"
grep -E "cosine_vs_fp32|argmax_agreement|tokens_equal" -A0 $OUT/decode_check.log | head -8
rm -rf /tmp/wtests && mkdir -p /tmp/wtests && cp -r $T/land/megagen /tmp/wtests/ && cp -r models /tmp/wtests/megagen/models && cp -r scratch/s23/tests /tmp/wtests/ && cp pyproject.toml /tmp/wtests/ && cp -r benchmarks /tmp/wtests/
(cd /tmp/wtests && PYTHONPATH=/tmp/wtests timeout $((590 - SECONDS)) python3 -m pytest -q tests/test_megakernel.py tests/test_models.py -x -k "not sampl" > $OUT/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -3 $OUT/gpu_tests.log)
