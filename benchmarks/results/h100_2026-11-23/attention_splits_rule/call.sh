#!/usr/bin/env bash
# (1) attention splits from max_seq_len: attention_split_keys 64 (default: 8 splits at context 512) / 1 (the old
#     rule: 32) / 32 (16), batch 1; (2) branch sampling-speed's multinomial.py: bench --sample, greedy in the same run.
set -u
export PYTHONUNBUFFERED=1 MEGAGEN_CACHE_DIR=/tmp/megagen_cache
mkdir -p $OUT/logs
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/logs/gpu.txt
pack() { (cd $OUT && tar czf all.tgz logs q* l* s* 2>/dev/null); }
run() {  # tag model extra-args...
  local tag=$1 model=$2; shift 2
  timeout 140 python3 -m megagen.bench --model $model --schedulers round_robin --baselines --out $OUT/$tag "$@" > $OUT/logs/$tag.log 2>&1
  echo "$tag $(grep '| megagen_round_robin' $OUT/$tag/bench.md | cut -d'|' -f2,3 | tr '\n' ' ')" | tee -a $OUT/logs/summary.txt
  pack
}
run q_k64 Qwen3-0.6B
run q_k1 Qwen3-0.6B --option attention_split_keys=1
run l_k64 Llama-3.2-1B
run l_k1 Llama-3.2-1B --option attention_split_keys=1
run q_k32 Qwen3-0.6B --option attention_split_keys=32
run l_k32 Llama-3.2-1B --option attention_split_keys=32
git apply scratch/sampling.patch && echo "sampling-speed applied" | tee -a $OUT/logs/summary.txt
run s_q Qwen3-0.6B --sample
run s_l Llama-3.2-1B --sample
cat $OUT/logs/summary.txt
