#!/usr/bin/env bash
# (1) 4 attention splits at context 512 (attention_split_keys=128) against the default 8, batch 1;
# (2) mixture-of-experts at real shapes, first layers only: logits against HuggingFace bf16 / fp32, megagen's step.
set -u
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
mkdir -p $OUT/logs
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/logs/gpu.txt
pack() { (cd $OUT && tar czf all.tgz logs q* l* moe* 2>/dev/null); }
run() {  # tag model extra-args...
  local tag=$1 model=$2; shift 2
  timeout 140 python3 -m megagen.bench --model $model --schedulers round_robin --baselines --out $OUT/$tag "$@" > $OUT/logs/$tag.log 2>&1
  echo "$tag $(grep '| megagen_round_robin' $OUT/$tag/bench.md | cut -d'|' -f2,3 | tr '\n' ' ')" | tee -a $OUT/logs/summary.txt
  pack
}
run q_k128 Qwen3-0.6B --option attention_split_keys=128
run q_k64 Qwen3-0.6B
run l_k128 Llama-3.2-1B --option attention_split_keys=128
run l_k64 Llama-3.2-1B
timeout 170 python3 benchmarks/decode_check.py --presets Qwen3-30B-A3B --layers 4 --new-tokens 32 --steps 50 --skip-hf --out $OUT/moe_qwen3_30b_a3b_4layers.json > $OUT/logs/moe_q.log 2>&1; echo "moe_q rc=$?" | tee -a $OUT/logs/summary.txt
pack
timeout 120 python3 benchmarks/decode_check.py --presets Mixtral-8x7B-v0.1 --layers 2 --new-tokens 32 --steps 50 --skip-hf --out $OUT/moe_mixtral_2layers.json > $OUT/logs/moe_m.log 2>&1; echo "moe_m rc=$?" | tee -a $OUT/logs/summary.txt
pack
cat $OUT/logs/summary.txt
