#!/bin/bash
# Where sample-select's time goes: profiles of the sampling step of the branch (sel3: its sampling tasks mark their
# progress) and of main, one machine.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cp scratch/s19/call5.sh $OUT/
for V in sel3 main; do
  PYTHONPATH=scratch/s19/trees/$V timeout $((570 - SECONDS)) python3 benchmarks/profile_decode.py --model Qwen3-0.6B --sample \
    --out /tmp/p_$V > $OUT/profile_$V.log 2>&1; echo "profile $V rc=$?"; cp /tmp/p_$V/profile.npz $OUT/profile_$V.npz
  head -4 $OUT/profile_$V.log | tail -2; echo "t=$SECONDS"
done
