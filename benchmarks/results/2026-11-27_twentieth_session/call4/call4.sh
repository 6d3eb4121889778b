#!/bin/bash
# The both tree (staged products a loop, records pipelined): where Qwen3-0.6B's warps stall now (ncu, greedy and
# sampling), its cubins; then its GPU tests (staging, megakernel).
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s20/call4.sh $OUT/
export PYTHONPATH=$PWD/scratch/s20/trees/both
run() {  # name, then ncu_step.py's arguments
  N=$1; shift
  timeout $((400 - SECONDS)) ncu --profile-from-start off --clock-control none -k regex:megakernel \
    --section WarpStateStats --section SchedulerStats --section SpeedOfLight --section SourceCounters \
    -o /tmp/$N -f python3 benchmarks/ncu_step.py "$@" > /tmp/$N.log 2>&1
  echo "$N rc=$? t=$SECONDS"; tail -2 /tmp/$N.log
  { cat /tmp/$N.log; ncu --import /tmp/$N.ncu-rep --page details; ncu --import /tmp/$N.ncu-rep --page raw --csv; } > $OUT/$N.txt 2>&1
  ncu --import /tmp/$N.ncu-rep --page source --csv --print-source sass 2>&1 | gzip > $OUT/${N}_sass.csv.gz
}
run both_greedy --model Qwen3-0.6B
run both_sample --model Qwen3-0.6B --sample
find ~/.triton/cache -name "megakernel.cubin" | tar -czf $OUT/cubins.tgz -T - 2>/dev/null
timeout $((585 - SECONDS)) python3 -m pytest -q -x tests/test_staging.py tests/test_megakernel.py > $OUT/pytest.log 2>&1
echo "pytest rc=$? t=$SECONDS"; tail -3 $OUT/pytest.log
