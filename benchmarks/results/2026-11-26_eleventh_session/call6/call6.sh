#!/bin/bash
# call 6 (2026-11-26, eleventh session): the test suite on the GPU at 3a1ae21 (acc8 landed)
cp scratch/s11/call6.sh $OUT/
SKIP_BENCH=1 TEST_WORKERS=14 TEST_TIMEOUT=540 bash benchmarks/gpu_check.sh
gzip -c $OUT/pytest.log > $OUT/pytest.log.gz && rm $OUT/pytest.log
