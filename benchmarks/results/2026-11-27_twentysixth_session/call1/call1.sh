#!/bin/bash
# Issue 14, session 26, call 1 (H100): tree sm = main 84665a6 + the round_robin_sm scheduler (queues laid over SMs,
# CTAs claim their SM's queues by %smid). The GPU test of the claims; ab.py Qwen3-0.6B and Llama-3.2-1B,
# round_robin against round_robin_sm (one process each); a profile of Qwen3-0.6B under round_robin_sm.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s26/trees
rm -rf /tmp/wtests && mkdir -p /tmp/wtests && cp -r $T/sm/megagen /tmp/wtests/ && cp -r models /tmp/wtests/megagen/models && cp -r scratch/s26/tests_sm /tmp/wtests/tests && cp pyproject.toml /tmp/wtests/ && cp -r benchmarks /tmp/wtests/
(cd /tmp/wtests && PYTHONPATH=/tmp/wtests timeout 100 python3 -m pytest -q -x tests/test_megakernel.py -k "sm_run_once or cuda_graph" > $OUT/gpu_test_sm.log 2>&1; echo "sm test rc=$? t=$SECONDS"; tail -15 $OUT/gpu_test_sm.log)
timeout 120 python3 benchmarks/ab.py --model Qwen3-0.6B --rounds 3 --passes 1 rr=$T/sm sm=$T/sm:scheduler=round_robin_sm > $OUT/ab_q.log 2>> $OUT/err.log
echo "ab q rc=$? t=$SECONDS"; tail -3 $OUT/ab_q.log
timeout 120 python3 benchmarks/ab.py --model Llama-3.2-1B --rounds 3 --passes 1 rr=$T/sm sm=$T/sm:scheduler=round_robin_sm > $OUT/ab_l.log 2>> $OUT/err.log
echo "ab l rc=$? t=$SECONDS"; tail -3 $OUT/ab_l.log
PYTHONPATH=$T/sm timeout 150 python3 benchmarks/profile_decode.py --model Qwen3-0.6B --scheduler round_robin_sm --out /tmp/psm > $OUT/profile_sm.log 2>&1
echo "profile rc=$? t=$SECONDS"; grep -A7 "^| phase | tiles | MB" $OUT/profile_sm.log | head -8; grep -A7 "^| phase | wait" $OUT/profile_sm.log
cp /tmp/psm/*.npz $OUT/ 2>/dev/null; ls /tmp/psm
