#!/bin/bash
# Session 33, call 5 (nvidia-h200): the tree to merge (branch route-keys, tree "merge": the route's picks over 64-bit
# keys, routing_weights picking the route's experts itself) on the GPU: decode_check of Qwen3-30B-A3B's first 4
# layers, then tests/test_moe.py's route and HF cases with the tree copied over megagen/. carry ["scratch/s33"].
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
cp -r scratch/s33/trees/merge/megagen/. megagen/ && cp scratch/s33/trees/merge/tests/test_moe.py tests/
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s33/call7_h200.sh $OUT/
timeout 100 python3 benchmarks/decode_check.py --presets Qwen3-30B-A3B --layers 4 --new-tokens 128 --steps 30 --skip-hf --out $OUT/check_qwen.json > $OUT/check_qwen.log 2>&1
echo "check rc=$? t=$SECONDS"; grep -E -A3 '"cosine_vs_hf_bf16"|argmax_agreement' $OUT/check_qwen.log | head -8
timeout $((250 - SECONDS)) python3 -m pytest -q tests/test_moe.py -p no:cacheprovider -k "ties or hf_routers or refuses or tiny-qwen3-moe-b3-tp1 or tiny-mixtral-b3-tp1" > $OUT/pytest_moe.log 2>&1
echo "pytest rc=$? t=$SECONDS"; tail -5 $OUT/pytest_moe.log
