#!/bin/bash
# Issue 14, session 26, call 2 (H100): raw = main 84665a6 + the o tiles copying the attention splits into their
# staging area by one bulk copy after their wait, and merging them from shared memory (branch split-copy).
# ab.py Qwen3-0.6B greedy and sampling, main against raw; a profile of raw; GPU merge tests; decode_check.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s26/trees
timeout 130 python3 benchmarks/ab.py --model Qwen3-0.6B --rounds 3 --passes 1 main=$T/main raw=$T/raw > $OUT/ab_q.log 2>> $OUT/err.log
echo "ab q rc=$? t=$SECONDS"; tail -3 $OUT/ab_q.log
PYTHONPATH=$T/raw timeout 150 python3 benchmarks/profile_decode.py --model Qwen3-0.6B --out /tmp/praw > $OUT/profile_raw.log 2>&1
echo "profile rc=$? t=$SECONDS"; grep -A7 "^| phase | tiles | MB" $OUT/profile_raw.log | head -8; grep -A7 "^| phase | wait" $OUT/profile_raw.log
timeout 130 python3 benchmarks/ab.py --model Qwen3-0.6B --sample --rounds 3 --passes 1 main=$T/main raw=$T/raw > $OUT/ab_qs.log 2>> $OUT/err.log
echo "ab qs rc=$? t=$SECONDS"; tail -3 $OUT/ab_qs.log
rm -rf /tmp/wtests && mkdir -p /tmp/wtests && cp -r $T/raw/megagen /tmp/wtests/ && cp -r models /tmp/wtests/megagen/models && cp -r scratch/s26/tests_raw /tmp/wtests/tests && cp pyproject.toml /tmp/wtests/ && cp -r benchmarks /tmp/wtests/
(cd /tmp/wtests && PYTHONPATH=/tmp/wtests timeout 130 python3 -m pytest -q -x tests/test_staging.py -k "merging_the_splits or staged_tiles_compute" > $OUT/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -6 $OUT/gpu_tests.log)
PYTHONPATH=$T/raw timeout 80 python3 benchmarks/decode_check.py --presets Qwen3-0.6B --layers 4 --new-tokens 16 --steps 20 --skip-hf --out $OUT/decode_check.json > $OUT/decode_check.log 2>&1
echo "decode_check rc=$? t=$SECONDS"; grep -A2 "cosine_vs_fp32\|argmax_agreement\|tokens_equal" $OUT/decode_check.json | head -20
