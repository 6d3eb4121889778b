#!/bin/bash
# Session 31, call 2 (H100): router-in-o-wave (tree owave, branch at b1f5e73) won call 1 (0.6864 vs main 0.7176 ms).
# Its profile on Qwen3-30B-A3B's first 8 layers, decode_check on 4 layers, then its tests/test_moe.py on the GPU
# with the tree copied over megagen/ (pytest puts the repository root first on the path).
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s31/call2.sh $OUT/
O=scratch/s31/trees/owave
PYTHONPATH=$O timeout 150 python3 benchmarks/profile_decode.py --model Qwen3-30B-A3B --layers 8 --out $OUT/prof > $OUT/prof_owave.log 2>&1
echo "profile rc=$? t=$SECONDS"; head -3 $OUT/prof_owave.log
PYTHONPATH=$O timeout 200 python3 benchmarks/decode_check.py --presets Qwen3-30B-A3B --layers 4 --new-tokens 128 --steps 30 --skip-hf --out $OUT/check_owave.json > $OUT/check_owave.log 2>&1
echo "check rc=$? t=$SECONDS"; tail -6 $OUT/check_owave.log
cp -r $O/megagen/. megagen/ && cp scratch/s31/test_moe_owave.py tests/test_moe.py
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
timeout $((585 - SECONDS)) python3 -m pytest -q -p no:cacheprovider tests/test_moe.py -k "test_moe_matches_hf or ctas_of_its_own or rows_asked" > $OUT/test_moe.log 2>&1
echo "tests rc=$? t=$SECONDS"; tail -5 $OUT/test_moe.log
cd $OUT && tar czf prof.tgz prof && rm -rf prof
