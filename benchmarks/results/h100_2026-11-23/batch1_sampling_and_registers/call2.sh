#!/usr/bin/env bash
# Sampling on the GPU: the tests that failed in call 1, the sampling step's profile, its cost over greedy.
set -u
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
mkdir -p $OUT/logs
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
timeout 120 python3 -m pytest -q -p no:cacheprovider -n 8 tests/test_sampling.py > $OUT/logs/tests.log 2>&1; tail -3 $OUT/logs/tests.log
(cd benchmarks && timeout 200 python3 profile_decode.py --model Qwen3-0.6B --sample --out $OUT/profile_sample > $OUT/logs/profile.log 2>&1); head -4 $OUT/logs/profile.log
timeout 240 python3 -m megagen.bench --model Qwen3-0.6B Llama-3.2-1B --schedulers round_robin --baselines --sample --out $OUT/sample_bench > $OUT/logs/sample.log 2>&1
grep -A1 "drawing\|megagen_round" $OUT/sample_bench/bench.md
cd $OUT && tar czf all.tgz logs profile_sample sample_bench 2>/dev/null; ls
