#!/bin/bash
# Issue 14, session 25, call 3 (H100): main against w (branch paired-mlp cd3db20), wo (w + the o tile merging in
# registers, d48a716) and wog (wo + branch overlap-groups, 76f371e); GPU tests of wog; decode_check of wog.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s25/trees
timeout 240 python3 benchmarks/ab.py --model Qwen3-0.6B --rounds 3 --passes 1 main=$T/main w=$T/w wo=$T/wo wog=$T/wog > $OUT/ab_q.log 2>> $OUT/err.log
echo "ab q rc=$? t=$SECONDS"; tail -6 $OUT/ab_q.log
rm -rf /tmp/wtests && mkdir -p /tmp/wtests && cp -r $T/wog/megagen /tmp/wtests/ && cp -r models /tmp/wtests/megagen/models && cp -r scratch/s25/tests_wog/tests /tmp/wtests/tests && cp pyproject.toml /tmp/wtests/ && cp -r benchmarks /tmp/wtests/
(cd /tmp/wtests && PYTHONPATH=/tmp/wtests timeout 200 python3 -m pytest -q tests/test_staging.py > $OUT/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -5 $OUT/gpu_tests.log)
(cd /tmp/wtests && PYTHONPATH=/tmp/wtests timeout 90 python3 -m pytest -q tests/test_megakernel.py -k "ticket or overlap or deadlock or stall" > $OUT/gpu_tests2.log 2>&1; echo "tests2 rc=$? t=$SECONDS"; tail -3 $OUT/gpu_tests2.log)
PYTHONPATH=$T/wog timeout $((590 - SECONDS)) python3 benchmarks/decode_check.py --presets Qwen3-0.6B --layers 4 --new-tokens 16 --steps 20 --skip-hf --out $OUT/decode_check.json > $OUT/decode_check.log 2>&1
echo "decode_check rc=$? t=$SECONDS"; tail -8 $OUT/decode_check.log
