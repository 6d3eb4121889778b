#!/bin/bash
# Issue 14, session 25, call 5 (H100): tree fin = branch paired-mlp (to land): GPU tests (the wide gate/up test
# alone, then the rest of test_staging.py and the scoreboard's ticket and stall tests); decode_check of Qwen3-0.6B;
# Llama-3.2-1B main against fin (it stages nothing: expected the same).
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s25/trees
rm -rf /tmp/wtests && mkdir -p /tmp/wtests && cp -r $T/fin/megagen /tmp/wtests/ && cp -r models /tmp/wtests/megagen/models && cp -r scratch/s25/tests_fin/tests /tmp/wtests/tests && cp pyproject.toml /tmp/wtests/ && cp -r benchmarks /tmp/wtests/
(cd /tmp/wtests && PYTHONPATH=/tmp/wtests timeout 200 python3 -m pytest -q -v --durations=5 tests/test_staging.py -k wide_gate_up_tiles > $OUT/gpu_test_wide.log 2>&1; echo "wide rc=$? t=$SECONDS"; tail -8 $OUT/gpu_test_wide.log)
(cd /tmp/wtests && PYTHONPATH=/tmp/wtests timeout 170 python3 -m pytest -q --durations=5 tests/test_staging.py tests/test_megakernel.py -k "not wide_gate_up_tiles and (staged or stage or merg or ticket or deadlock or stall)" > $OUT/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -10 $OUT/gpu_tests.log)
PYTHONPATH=$T/fin timeout 90 python3 benchmarks/decode_check.py --presets Qwen3-0.6B --layers 4 --new-tokens 16 --steps 20 --skip-hf --out $OUT/decode_check.json > $OUT/decode_check.log 2>&1
echo "decode_check rc=$? t=$SECONDS"; grep -A2 "cosine_vs_fp32\|argmax_agreement\|tokens_equal" $OUT/decode_check.json | head -20
timeout $((590 - SECONDS)) python3 benchmarks/ab.py --model Llama-3.2-1B --rounds 3 --passes 1 main=$T/main fin=$T/fin > $OUT/ab_l.log 2>> $OUT/err.log
echo "ab l rc=$? t=$SECONDS"; tail -4 $OUT/ab_l.log
