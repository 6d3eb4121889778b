#!/bin/bash
# Prepared in session 30 for session 31's first call (H100): two MoE branches, not yet measured, against main on
# Qwen3-30B-A3B's first 8 layers (ab.py, one process a tree, 3 alternating rounds):
#   owave = router-in-o-wave (o tiled with the router's rows; the router's tiles on the CTAs o leaves free),
#   cdown = combine-in-down (the combine in the last expert down tiles, by a ticket),
#   both  = moe-next (the two merged); owave_r2 = owave with main's tiling (router_tile_rows=2): should match main.
# Before the call (on this machine), from /work/main:
#   for t in main:/work/main owave:/work/wt30 cdown:/work/wt30c both:/work/wt30d; do n=${t%%:*}; d=${t#*:};
#     mkdir -p scratch/s31/trees/$n; (cd $d && tar --exclude=__pycache__ --exclude=megagen/models -cf - megagen) |
#     tar -x -C scratch/s31/trees/$n; done
# run: bash scratch/s31/call1.sh, carry ["scratch/s31"]. Then for a winner: profile_decode.py --layers 8,
# decode_check --layers 4, tests/test_moe.py on the GPU with its tree copied over megagen/ (pytest puts the
# repository root first on the path; about 45 s a test on a fresh machine), the whole-model bench from /tmp.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s31/call1.sh $OUT/
T=scratch/s31/trees
timeout 560 python3 benchmarks/ab.py --model Qwen3-30B-A3B --layers 8 --rounds 3 --passes 1 main=$T/main owave=$T/owave owave_r2=$T/owave:router_tile_rows=2 cdown=$T/cdown both=$T/both > $OUT/ab_moe.log 2>> $OUT/err.log
echo "ab rc=$? t=$SECONDS"; cat $OUT/ab_moe.log; grep "^#" $OUT/err.log | sort -u; tail -3 $OUT/err.log
