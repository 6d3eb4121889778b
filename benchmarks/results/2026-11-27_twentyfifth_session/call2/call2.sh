#!/bin/bash
# Issue 14, session 25, call 2 (H100): tree w = branch paired-mlp with the staging area's parts on 128-byte lines and
# 48-row gate/up tiles in 32 x 256 blocks; main against w, w without wide gate/up, w with 8 attention splits; og
# (branch overlap-groups) again; sampling main against w; GPU tests of test_staging.py on w; main's staged-decode test
# alone (call 1's failure); a profile of w.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s25/trees
timeout 230 python3 benchmarks/ab.py --model Qwen3-0.6B --rounds 3 --passes 1 main=$T/main w=$T/w narrow=$T/w:wide_gate_up=False w8=$T/w:max_attention_splits=8 og=$T/og > $OUT/ab_q.log 2>> $OUT/err.log
echo "ab q rc=$? t=$SECONDS"; tail -7 $OUT/ab_q.log
mk() { rm -rf /tmp/$1 && mkdir -p /tmp/$1 && cp -r $2/megagen /tmp/$1/ && cp -r models /tmp/$1/megagen/models && cp -r $3 /tmp/$1/tests && cp pyproject.toml /tmp/$1/ && cp -r benchmarks /tmp/$1/; }
mk wtests $T/w scratch/s25/tests
(cd /tmp/wtests && PYTHONPATH=/tmp/wtests timeout 170 python3 -m pytest -q -x tests/test_staging.py > $OUT/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -5 $OUT/gpu_tests.log)
mk mtests $T/main scratch/s25/tests_main/tests
(cd /tmp/mtests && PYTHONPATH=/tmp/mtests timeout 60 python3 -m pytest -q tests/test_staging.py -k test_a_staged_decode_step > $OUT/main_staged_test.log 2>&1; echo "main test rc=$? t=$SECONDS"; tail -3 $OUT/main_staged_test.log)
timeout 130 python3 benchmarks/ab.py --model Qwen3-0.6B --sample --rounds 3 --passes 1 main=$T/main w=$T/w > $OUT/ab_qs.log 2>> $OUT/err.log
echo "ab qs rc=$? t=$SECONDS"; tail -4 $OUT/ab_qs.log
PYTHONPATH=$T/w timeout $((590 - SECONDS)) python3 benchmarks/profile_decode.py --model Qwen3-0.6B --out /tmp/pw > $OUT/profile_w.log 2>&1
echo "profile rc=$? t=$SECONDS"; grep -A9 "^| phase | tiles | MB" $OUT/profile_w.log | head -10
