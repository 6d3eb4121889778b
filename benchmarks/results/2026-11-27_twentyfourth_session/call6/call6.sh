#!/bin/bash
# Issue 14, call 6: the landed tree (final3: merge_in_o on by default where o stages): decode_check of
# Qwen3-0.6B and Llama-3.2-1B; GPU tests of the merge (staged on a GPU) and of the scoreboard's stalls and tickets.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s24/trees/final3
rm -rf /tmp/wtests && mkdir -p /tmp/wtests && cp -r $T/megagen /tmp/wtests/ && cp -r models /tmp/wtests/megagen/models && cp -r scratch/s24/tests /tmp/wtests/ && cp pyproject.toml /tmp/wtests/ && cp -r benchmarks /tmp/wtests/
(cd /tmp/wtests && PYTHONPATH=/tmp/wtests timeout 150 python3 -m pytest -q tests/test_staging.py -k "merg or staged_tiles" tests/test_megakernel.py -k "merg or staged_tiles or deadlock or stall or tickets" > $OUT/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -3 $OUT/gpu_tests.log)
PYTHONPATH=$T timeout $((330 - SECONDS)) python3 benchmarks/decode_check.py --presets Qwen3-0.6B Llama-3.2-1B --layers 4 --new-tokens 16 --steps 20 --skip-hf --out $OUT/decode_check.json > $OUT/decode_check.log 2>&1
echo "decode_check rc=$? t=$SECONDS"; grep -A3 "cosine_vs_fp32\|argmax_agreement\|tokens_equal" $OUT/decode_check.log | head -40
