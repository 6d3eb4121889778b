#!/bin/bash
# Session 34, call C (nvidia-h200-x2, carry ["scratch/s34", ".whl"]): call B's tp=2 rowblk run again, run from the tree's
# directory (python -m puts the working directory first on sys.path, so call B ran main's megagen and refused the
# option). Qwen3-8B tp=2: rowblk (whole_row_blocks=True, with rank 0's profile), main, rowblk again; one torchrun each.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache NVSHMEM_DISABLE_NVLS=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $OUT/gpu.txt
grep -q H200 $OUT/gpu.txt || { echo "not H200s: stopping"; exit 0; }
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || echo "wheel failed"
cp scratch/s34/callC_h200x2.sh $OUT/
T=$PWD/scratch/s34/trees/exp
cd $T
for v in rowblk main rowblk2; do
  left=$((560 - SECONDS)); [ $left -lt 90 ] && { echo "no time for $v"; break; }
  opt=""; [ $v != main ] && opt="--option whole_row_blocks=True"; [ $v = rowblk ] && opt="$opt --profile"
  PYTHONPATH=/tmp/site timeout $left torchrun --nproc-per-node 2 -m megagen.bench_tp --model Qwen3-8B \
    --new-tokens 8 --steps 200 $opt --out $OUT/tp2_$v > $OUT/tp2_$v.log 2>&1
  echo "tp2 $v rc=$? t=$SECONDS"; grep -m1 '"median_ms"' $OUT/tp2_$v/bench_tp2.json; grep -m1 "megagen/bench_tp.py" $OUT/tp2_$v.log
done
(cd $OUT && tar czf all.tgz tp2_* && rm -rf tp2_*/ && rm -f tp2_*.log)
