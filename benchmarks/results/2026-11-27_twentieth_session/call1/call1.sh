#!/bin/bash
# Where the MegaKernel's warps stall (Nsight Compute): Qwen3-0.6B batch 1, greedy and sampling; Llama-3.2-1B greedy.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
ncu --version | tail -1
cp scratch/s20/call1.sh $OUT/
run() {  # name, then ncu_step.py's arguments
  N=$1; shift
  timeout $((580 - SECONDS)) ncu --profile-from-start off --clock-control none -k regex:megakernel \
    --section WarpStateStats --section SchedulerStats --section SpeedOfLight --section InstructionStats \
    --section SourceCounters --section LaunchStats -o /tmp/$N -f python3 benchmarks/ncu_step.py "$@" > /tmp/$N.log 2>&1
  echo "$N rc=$? t=$SECONDS"; tail -3 /tmp/$N.log
  { cat /tmp/$N.log; ncu --import /tmp/$N.ncu-rep --page details; ncu --import /tmp/$N.ncu-rep --page raw --csv; } > $OUT/$N.txt 2>&1
  ncu --import /tmp/$N.ncu-rep --page source --csv --print-source sass 2>&1 | gzip > $OUT/${N}_sass.csv.gz
  ls -la $OUT
}
run qwen_greedy --model Qwen3-0.6B
run qwen_sample --model Qwen3-0.6B --sample
run llama_greedy --model Llama-3.2-1B
