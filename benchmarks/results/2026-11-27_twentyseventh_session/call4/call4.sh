#!/bin/bash
# Issue 14, session 27, call 4 (H100): tree land = branch copy-rate as committed (Tiling.copy_issue_rate, 1800 bytes
# per SM cycle by default). GPU staging tests (the wide gate/up boxes of Qwen3-0.6B's shapes, a staged decode);
# megagen bench (Qwen3-0.6B, PDL and torch.compile baselines, sampling); a profile of Qwen3-0.6B.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s27/trees
rm -rf /tmp/wtests && mkdir -p /tmp/wtests && cp -r $T/land/megagen /tmp/wtests/ && cp -r models /tmp/wtests/megagen/models && cp -r scratch/s27/tests_land /tmp/wtests/tests && cp pyproject.toml /tmp/wtests/ && cp -r benchmarks /tmp/wtests/
(cd /tmp/wtests && PYTHONPATH=/tmp/wtests timeout 165 python3 -m pytest -q tests/test_staging.py -k "wide_gate_up_tiles or staged_decode" > $OUT/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -4 $OUT/gpu_tests.log)
PYTHONPATH=$T/land timeout 160 python3 -m megagen.cli bench --model Qwen3-0.6B --batch 1 --schedulers round_robin --baselines ops_pdl_cuda_graph torch_compile_cuda_graph --sample --out $OUT/bench > $OUT/bench.log 2>&1
echo "bench rc=$? t=$SECONDS"; grep "megagen_\|ops_pdl\|torch_compile" $OUT/bench/bench.md | head -6
PYTHONPATH=$T/land timeout $((425 - SECONDS)) python3 benchmarks/profile_decode.py --model Qwen3-0.6B --out /tmp/pq > $OUT/profile_q.log 2>&1
echo "profile q rc=$? t=$SECONDS"; head -3 $OUT/profile_q.log; grep -A7 "^| phase | tiles | MB" $OUT/profile_q.log | head -8; grep -A7 "^| phase | wait" $OUT/profile_q.log
cp /tmp/pq/profile.npz $OUT/profile_q.npz 2>/dev/null
