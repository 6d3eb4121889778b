#!/bin/bash
# Issue 14: main (32144a6) against the abort flag read every 32 polls (abort); GPU deadlock tests on abort.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s23/trees
for m in Qwen3-0.6B Llama-3.2-1B; do
  timeout 170 python3 benchmarks/ab.py --model $m --rounds 3 --passes 1 main=$T/main abort=$T/abort > $OUT/ab_$m.log 2>> $OUT/ab.err
  echo "ab $m rc=$? t=$SECONDS"; tail -3 $OUT/ab_$m.log
done
rm -rf /tmp/wtests && mkdir -p /tmp/wtests && cp -r $T/abort/megagen /tmp/wtests/ && cp -r models /tmp/wtests/megagen/models && cp -r scratch/s23/tests /tmp/wtests/ && cp pyproject.toml /tmp/wtests/ && cp -r benchmarks /tmp/wtests/
(cd /tmp/wtests && PYTHONPATH=/tmp/wtests timeout $((400 - SECONDS)) python3 -m pytest -q tests/test_megakernel.py -k "deadlock or stall or tickets" > $OUT/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -3 $OUT/gpu_tests.log)
