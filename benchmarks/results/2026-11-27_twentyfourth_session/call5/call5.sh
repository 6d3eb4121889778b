#!/bin/bash
# Issue 14, call 5: tree final2 (call 3's split loads, merge_in_o off by default): off against on, in one process,
# greedy and sampling; a profile with it on; GPU tests of the staging and the compile checks.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s24/trees/final2
timeout 130 python3 benchmarks/ab.py --model Qwen3-0.6B --rounds 3 --passes 1 off=$T on=$T:merge_in_o=True > $OUT/ab_q.log 2>> $OUT/err.log
echo "ab q rc=$? t=$SECONDS"; tail -4 $OUT/ab_q.log
timeout 130 python3 benchmarks/ab.py --model Qwen3-0.6B --sample --rounds 3 --passes 1 off=$T on=$T:merge_in_o=True > $OUT/ab_qs.log 2>> $OUT/err.log
echo "ab qs rc=$? t=$SECONDS"; tail -4 $OUT/ab_qs.log
rm -rf /tmp/wtests && mkdir -p /tmp/wtests && cp -r $T/megagen /tmp/wtests/ && cp -r models /tmp/wtests/megagen/models && cp -r scratch/s24/tests /tmp/wtests/ && cp pyproject.toml /tmp/wtests/ && cp -r benchmarks /tmp/wtests/
(cd /tmp/wtests && PYTHONPATH=/tmp/wtests timeout 200 python3 -m pytest -q tests/test_staging.py tests/test_gpu_compile.py > $OUT/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -5 $OUT/gpu_tests.log)
PYTHONPATH=$T timeout $((590 - SECONDS)) python3 benchmarks/profile_decode.py --model Qwen3-0.6B --option merge_in_o=True --out /tmp/pm > $OUT/profile_on.log 2>&1
echo "profile rc=$? t=$SECONDS"; grep -A9 "^| phase | tiles | MB" $OUT/profile_on.log | head -10
