#!/bin/bash
# Issue 14, session 28, call 1 (H100). (1) The bench-vs-ab gap: gap_probe.py times one Qwen3-0.6B build of main as
# the bench does, after idle seconds and long warm-ups, and as ab.py does. (2) Llama-3.2-1B staging only some
# projections (tree ss = branch stage-some, experimental stage_ops bits: 1 q/k/v, 2 o; o staged merges the splits).
# (3) megagen bench of main, Qwen3-0.6B, as the issue measures it.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee $OUT/gpu.txt
S=scratch/s28; T=$S/trees
timeout 150 python3 $S/gap_probe.py Qwen3-0.6B $OUT/gap.json > $OUT/gap.log 2>> $OUT/err.log
echo "gap rc=$? t=$SECONDS"; cat $OUT/gap.log
timeout $((470 - SECONDS)) python3 benchmarks/ab.py --model Llama-3.2-1B --rounds 3 --passes 1 base=$T/ss o=$T/ss:stage_ops=2 qkvo=$T/ss:stage_ops=3 o_nomerge=$T/ss:stage_ops=2,merge_in_o=False > $OUT/ab_l.log 2>> $OUT/err.log
echo "ab l rc=$? t=$SECONDS"; tail -6 $OUT/ab_l.log
timeout $((585 - SECONDS)) python3 -m megagen.cli bench --model Qwen3-0.6B --batch 1 --schedulers round_robin --baselines ops_pdl_cuda_graph torch_compile_cuda_graph --out $OUT/bench > $OUT/bench.log 2>&1
echo "bench rc=$? t=$SECONDS"; cat $OUT/bench/bench.md 2>/dev/null | head -12
