#!/bin/bash
# call 2 (2026-11-26, fifteenth session): the o projection merging the attention's splits (branch fuse-combine, on
# top of xregs: staged tiles on tensor cores): GPU tests of the decode models, A/B main / mma / fused on Qwen3-0.6B
# and main / fused on Llama-3.2-1B, decode_check of Llama-3.2-1B's first 4 layers
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s15/call2.sh $OUT/
T=scratch/s15/trees
(cd $T/fused && PYTHONPATH=$PWD timeout 130 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_staging.py \
  tests/test_models.py > $OUT/pytest_gpu.log 2>&1); echo "pytest rc=$?"; tail -4 $OUT/pytest_gpu.log | cut -c1-300
echo "t=$SECONDS"
timeout 200 python3 benchmarks/ab.py --model Qwen3-0.6B --batch 1 --rounds 3 --passes 1 main=$T/main mma=$T/mma \
  fused=$T/fused > $OUT/ab_Qwen3-0.6B.log 2>&1; echo "ab rc=$?"; grep -i "rounds\||" $OUT/ab_Qwen3-0.6B.log | tail -8
echo "t=$SECONDS"
timeout $(( 540 - SECONDS < 150 ? 540 - SECONDS : 150 )) python3 benchmarks/ab.py --model Llama-3.2-1B --batch 1 \
  --rounds 3 --passes 1 main=$T/main fused=$T/fused > $OUT/ab_Llama-3.2-1B.log 2>&1; echo "ab rc=$?"
grep -i "rounds\||" $OUT/ab_Llama-3.2-1B.log | tail -6; echo "t=$SECONDS"
PYTHONPATH=$T/fused timeout $((590 - SECONDS)) python3 benchmarks/decode_check.py --presets Llama-3.2-1B Qwen3-0.6B \
  --layers 4 --new-tokens 16 --skip-hf --out $OUT/check.json > $OUT/check.log 2>&1; echo "check rc=$?"
grep -E "preset|cosine|argmax|tokens_equal|min\"" $OUT/check.json | head -30; echo "t=$SECONDS"
