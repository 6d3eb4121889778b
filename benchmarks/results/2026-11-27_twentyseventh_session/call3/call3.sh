#!/bin/bash
# Issue 14, session 27, call 3 (H100): tree land = branch copy-rate (Tiling.copy_issue_rate, default 1800 bytes per SM
# cycle: every staged phase spreads its copy starts over its weight bytes / rate). ab.py Qwen3-0.6B: main (0e05cee)
# against land at its default and at rates 1350, 1000, 700 and 0 (one process for land's variants);
# decode_check of land; megagen bench of land (Qwen3-0.6B, PDL and torch.compile baselines, sampling).
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s27/trees
timeout 300 python3 benchmarks/ab.py --model Qwen3-0.6B --rounds 3 --passes 1 main=$T/main land=$T/land r1350=$T/land:copy_issue_rate=1350 r1000=$T/land:copy_issue_rate=1000 r700=$T/land:copy_issue_rate=700 r0=$T/land:copy_issue_rate=0 > $OUT/ab_q.log 2>> $OUT/err.log
echo "ab q rc=$? t=$SECONDS"; tail -8 $OUT/ab_q.log
PYTHONPATH=$T/land timeout 70 python3 benchmarks/decode_check.py --presets Qwen3-0.6B --layers 4 --new-tokens 16 --steps 20 --skip-hf --out $OUT/decode_check.json > $OUT/decode_check.log 2>&1
echo "decode_check rc=$? t=$SECONDS"; grep -A2 "cosine_vs_fp32\|argmax_agreement\|tokens_equal" $OUT/decode_check.json | head -12
PYTHONPATH=$T/land timeout 170 python3 -m megagen.cli bench --model Qwen3-0.6B --batch 1 --schedulers round_robin --baselines ops_pdl_cuda_graph torch_compile_cuda_graph --sample --out $OUT/bench > $OUT/bench.log 2>&1
echo "bench rc=$? t=$SECONDS"; cat $OUT/bench/bench.md 2>/dev/null | head -12
