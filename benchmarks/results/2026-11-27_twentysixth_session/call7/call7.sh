#!/bin/bash
# Issue 14, session 26, call 7 (H100): land = branch spread-issue (main 84665a6 + gate/up tiles spreading their
# weight copies' starts over Tiling.gate_up_copy_spread = 3500 SM cycles). ab.py Qwen3-0.6B main against land;
# GPU staging tests on land; megagen bench Qwen3-0.6B with the PDL and torch.compile baselines and sampling.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s26/trees
timeout 130 python3 benchmarks/ab.py --model Qwen3-0.6B --rounds 3 --passes 1 main=$T/main land=$T/land > $OUT/ab_q.log 2>> $OUT/err.log
echo "ab q rc=$? t=$SECONDS"; tail -3 $OUT/ab_q.log
rm -rf /tmp/wtests && mkdir -p /tmp/wtests && cp -r $T/land/megagen /tmp/wtests/ && cp -r models /tmp/wtests/megagen/models && cp -r scratch/s26/tests_land /tmp/wtests/tests && cp pyproject.toml /tmp/wtests/ && cp -r benchmarks /tmp/wtests/
(cd /tmp/wtests && PYTHONPATH=/tmp/wtests timeout 150 python3 -m pytest -q tests/test_staging.py -k "wide_gate_up_tiles or merging_the_splits or staged_decode" > $OUT/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -4 $OUT/gpu_tests.log)
PYTHONPATH=$T/land timeout $((560 - SECONDS)) python3 -m megagen.cli bench --model Qwen3-0.6B --batch 1 --schedulers round_robin --baselines ops_pdl_cuda_graph torch_compile_cuda_graph --sample --out $OUT/bench > $OUT/bench.log 2>&1
echo "bench rc=$? t=$SECONDS"; tail -12 $OUT/bench.log
