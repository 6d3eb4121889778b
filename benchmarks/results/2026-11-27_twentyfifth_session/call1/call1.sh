#!/bin/bash
# Issue 14, session 25, call 1 (H100): wide gate/up tiles (branch paired-mlp): main against w16 (48-row gate/up tiles,
# 16 x 512 blocks; off = wide_gate_up=False), w32 (32 x 256 blocks) and og (branch overlap-groups); a profile of w16;
# GPU tests of test_staging.py on w16.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s25/trees
timeout 260 python3 benchmarks/ab.py --model Qwen3-0.6B --rounds 3 --passes 1 main=$T/main w16=$T/w16 w16off=$T/w16:wide_gate_up=False w32=$T/w32 og=$T/og > $OUT/ab_q.log 2>> $OUT/err.log
echo "ab q rc=$? t=$SECONDS"; tail -6 $OUT/ab_q.log
rm -rf /tmp/wtests && mkdir -p /tmp/wtests && cp -r $T/w16/megagen /tmp/wtests/ && cp -r models /tmp/wtests/megagen/models && cp -r scratch/s25/tests /tmp/wtests/ && cp pyproject.toml /tmp/wtests/ && cp -r benchmarks /tmp/wtests/
(cd /tmp/wtests && PYTHONPATH=/tmp/wtests timeout 150 python3 -m pytest -q tests/test_staging.py > $OUT/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -5 $OUT/gpu_tests.log)
PYTHONPATH=$T/w16 timeout $((590 - SECONDS)) python3 benchmarks/profile_decode.py --model Qwen3-0.6B --out /tmp/pw > $OUT/profile_w16.log 2>&1
echo "profile rc=$? t=$SECONDS"; grep -A9 "^| phase | tiles | MB" $OUT/profile_w16.log | head -10
