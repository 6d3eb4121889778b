#!/bin/bash
# Issue 16: Qwen3-30B-A3B's first 8 layers, main against the router tiled narrower (router) and that plus the
# route's reductions within a warp (warp); decode_check and the MoE tests on the warp tree.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s22/trees
timeout 330 python3 scratch/s22/ab.py --model Qwen3-30B-A3B --layers 8 --rounds 3 --passes 1 \
  main=$T/main router=$T/router warp=$T/warp main_again=$T/main > $OUT/ab_moe.log 2> $OUT/ab_moe.err; echo "ab rc=$? t=$SECONDS"
tail -7 $OUT/ab_moe.log
PYTHONPATH=$T/warp timeout 150 python3 benchmarks/decode_check.py --presets Qwen3-30B-A3B --layers 4 --new-tokens 16 --steps 20 --skip-hf --out $OUT/decode_check_moe.json > $OUT/decode_check.log 2>&1; echo "check rc=$? t=$SECONDS"
tail -4 $OUT/decode_check.log
rm -rf /tmp/wtests && mkdir -p /tmp/wtests && cp -r $T/warp/megagen /tmp/wtests/ && cp -r tests /tmp/wtests/ && cp pyproject.toml /tmp/wtests/
(cd /tmp/wtests && PYTHONPATH=/tmp/wtests timeout $((580 - SECONDS)) python3 -m pytest -q -x tests/test_moe.py > $OUT/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -3 $OUT/gpu_tests.log)
