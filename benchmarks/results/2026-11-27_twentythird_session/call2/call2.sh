#!/bin/bash
# Issue 14: the ticket merge with all heads of a KV group merged at once (one round trip), against main; decode_check; its profile.
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip failed"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T=scratch/s23/trees
timeout 210 python3 benchmarks/ab.py --model Qwen3-0.6B --rounds 3 --passes 1 main=$T/ticket ticket=$T/ticket:ticket_merge=True \
  > $OUT/ab_q.log 2> $OUT/ab_q.err; echo "ab q rc=$? t=$SECONDS"; tail -4 $OUT/ab_q.log
timeout 210 python3 benchmarks/ab.py --model Llama-3.2-1B --rounds 3 --passes 1 main=$T/ticket ticket=$T/ticket:ticket_merge=True \
  > $OUT/ab_l.log 2> $OUT/ab_l.err; echo "ab l rc=$? t=$SECONDS"; tail -4 $OUT/ab_l.log
PYTHONPATH=$T/ticket timeout 150 python3 benchmarks/decode_check.py --presets Qwen3-0.6B Llama-3.2-1B --layers 4 --new-tokens 16 --steps 20 --skip-hf --option ticket_merge=True --out $OUT/decode_check.json > $OUT/decode_check.log 2>&1; echo "check rc=$? t=$SECONDS"
tail -6 $OUT/decode_check.log
PYTHONPATH=$T/ticket timeout $((590 - SECONDS)) python3 benchmarks/profile_decode.py --model Qwen3-0.6B --option ticket_merge=True --out /tmp/p_t > $OUT/profile_t.log 2>&1; echo "profile rc=$? t=$SECONDS"
cp /tmp/p_t/waterfall.md $OUT/waterfall_ticket.md; head -3 $OUT/profile_t.log
