#!/bin/bash
# Session 36, call 1 (nvidia-h200, carry ["scratch/s36"]): the sampler of short lists and a threshold search
# (working tree) against main's bitonic sampler (scratch/s36/trees/main = HEAD 95539bf).
# Predicted: sampling's cost over greedy, Qwen3-0.6B +57-69 us (+7.7-9.6%) -> about +10 us; the sample tiles
# ~19 -> ~3 us, the pick ~26-36 -> ~7 us.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s36/call1_h200.sh $OUT/
M=$PWD/scratch/s36/trees/main
timeout 150 python3 -m pytest -q -p no:cacheprovider -n 12 tests/test_sampling.py \
  -k "kernel_draws or short_lists or ranks_draw or 16_bit or distribution" > $OUT/pytest.log 2>&1
echo "pytest rc=$? t=$SECONDS"; tail -3 $OUT/pytest.log
for m in Qwen3-0.6B Llama-3.2-1B; do
  timeout 200 python3 benchmarks/ab.py --model $m --rounds 3 --passes 1 main_g=$M:sample=False main_s=$M:sample=True \
    new_g:sample=False new_s:sample=True > $OUT/ab_$m.log 2> $OUT/ab_$m.err
  echo "ab $m rc=$? t=$SECONDS"; cat $OUT/ab_$m.log; tail -2 $OUT/ab_$m.err
done
left=$((570 - SECONDS)); [ $left -gt 60 ] && timeout $left python3 benchmarks/profile_decode.py --model Qwen3-0.6B \
  --sample --out $OUT/prof > $OUT/prof.log 2>&1
echo "profile rc=$? t=$SECONDS"; cat $OUT/prof/summary.txt 2>/dev/null | head -5
grep -i "sample\|next_token\|lm_head" $OUT/prof/waterfall.md 2>/dev/null | head -12
(cd $OUT && tar czf all.tgz ab_* pytest.log prof prof.log 2>/dev/null && rm -rf prof)
