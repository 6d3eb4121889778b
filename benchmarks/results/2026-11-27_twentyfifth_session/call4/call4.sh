#!/bin/bash
# Issue 14, session 25, call 4 (H100): tree ws = branch paired-mlp ee8f8db (w + the splits in the model dtype):
# main against ws and ws with fp32 splits (= call 3's w), greedy; sampling main against ws; GPU tests of
# test_staging.py on ws; decode_check of ws.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s25/trees
timeout 170 python3 benchmarks/ab.py --model Qwen3-0.6B --rounds 3 --passes 1 main=$T/main ws=$T/ws w=$T/ws:splits_in_model_dtype=False > $OUT/ab_q.log 2>> $OUT/err.log
echo "ab q rc=$? t=$SECONDS"; tail -5 $OUT/ab_q.log
timeout 130 python3 benchmarks/ab.py --model Qwen3-0.6B --sample --rounds 3 --passes 1 main=$T/main ws=$T/ws > $OUT/ab_qs.log 2>> $OUT/err.log
echo "ab qs rc=$? t=$SECONDS"; tail -4 $OUT/ab_qs.log
rm -rf /tmp/wtests && mkdir -p /tmp/wtests && cp -r $T/ws/megagen /tmp/wtests/ && cp -r models /tmp/wtests/megagen/models && cp -r scratch/s25/tests_ws/tests /tmp/wtests/tests && cp pyproject.toml /tmp/wtests/ && cp -r benchmarks /tmp/wtests/
(cd /tmp/wtests && PYTHONPATH=/tmp/wtests timeout 200 python3 -m pytest -q -v tests/test_staging.py > $OUT/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -5 $OUT/gpu_tests.log)
PYTHONPATH=$T/ws timeout $((590 - SECONDS)) python3 benchmarks/decode_check.py --presets Qwen3-0.6B --layers 4 --new-tokens 16 --steps 20 --skip-hf --out $OUT/decode_check.json > $OUT/decode_check.log 2>&1
echo "decode_check rc=$? t=$SECONDS"; grep -A2 "cosine_vs_fp32\|argmax_agreement\|tokens_equal" $OUT/decode_check.json | head -20
