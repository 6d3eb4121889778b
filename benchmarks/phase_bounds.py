"""Bounds for the phases of a decode layer: each phase alone, done by a library kernel, timed on the GPU.

    python benchmarks/phase_bounds.py --model Qwen3-0.6B [--batch 1] [--context 512] [--waterfall W.md] [--out F.md]

Issue 14 asks, for a target out of reach, for a measured bound on every phase more than 20% over its floor: a
kernel doing just that phase, on the same GPU. For the phases of a layer (the waterfall's names) and the lm_head
this times what PyTorch's libraries do at the model's shapes: cuBLAS (``torch.nn.functional.linear``) for q/k/v
(one matrix of all three), o, gate/up (one matrix of both), down and the lm_head, and the fused attention
(``scaled_dot_product_attention``) for one token's queries against ``context`` cached keys and values.

Each phase runs from a CUDA graph of back-to-back launches over enough copies of its weights (and caches) that
they exceed twice the L2, so every launch reads from memory; a launch's time is the graph's replay time over its
launches, median of rounds, and includes the gap between two kernels of a graph (which a MegaKernel's phase does
not pay, and a PDL launch partly hides). Beside each: the bytes it reads (``waterfall.op_bytes``), its floor at
the copy bandwidth measured in the same run, and with ``--waterfall`` (``profile_decode.py``'s, same model and
GPU) megagen's critical time for the phase. Without a GPU it prints the phases' shapes and bytes only.
"""
from __future__ import annotations

import argparse
import math
import statistics
from pathlib import Path

import torch
import torch.nn.functional as F

from megagen.bench import copy_bandwidth, measure
from megagen.models import preset_config
from waterfall import op_bytes

# phase -> the ops of one layer (or the lm_head) whose bytes it reads, as the waterfall groups them
PHASE_OPS = {"q/k/v": ("q_proj", "k_proj", "v_proj"), "attention": ("attention",), "o": ("o_proj",),
             "gate/up": ("gate_proj", "up_proj"), "down": ("down_proj",), "lm_head": ("lm_head",)}


def phase_tensors(config, batch: int, context: int, dtype, device) -> dict[str, list[torch.Tensor]]:
    """One copy of what each phase reads and its input, random (never zero): [input, weight] for a projection,
    [queries, keys, values] for the attention."""
    hidden, inter, vocab = config.hidden_size, config.intermediate_size, config.vocab_size
    heads, kv = config.num_attention_heads, config.num_key_value_heads
    d = getattr(config, "head_dim", None) or hidden // heads

    def rand(*shape):
        return torch.randn(shape, dtype=dtype, device=device)
    return {"q/k/v": [rand(batch, hidden), rand((heads + 2 * kv) * d, hidden)],
            "attention": [rand(batch, heads, 1, d), rand(batch, kv, context, d), rand(batch, kv, context, d)],
            "o": [rand(batch, heads * d), rand(hidden, heads * d)],
            "gate/up": [rand(batch, hidden), rand(2 * inter, hidden)],
            "down": [rand(batch, inter), rand(hidden, inter)],
            "lm_head": [rand(batch, hidden), rand(vocab, hidden)]}


def run_phase(phase: str, tensors: list[torch.Tensor]) -> torch.Tensor:
    """The library call doing the phase."""
    if phase == "attention":
        q, k, v = tensors
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    x, w = tensors
    return F.linear(x, w)


def read_bytes(phase: str, tensors: list[torch.Tensor]) -> int:
    """What the phase must read from memory: its weights, or the attention's cached keys and values."""
    return sum(t.nbytes for t in (tensors[1:] if phase == "attention" else tensors[1:2]))


def time_per_launch(phase: str, copies: list[list[torch.Tensor]], rounds: int = 5, replays: int = 20) -> float:
    """µs a launch: a CUDA graph of one launch a copy, replayed, CUDA-event timed, median of rounds."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for tensors in copies:  # warm-up outside the graph (library handles, autotuned kernels)
            run_phase(phase, tensors)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for tensors in copies:
            run_phase(phase, tensors)
    times = measure(lambda: [graph.replay() for _ in range(replays)], rounds, 3)  # ms a round of replays
    return statistics.median(times) * 1e3 / (replays * len(copies))


def waterfall_critical(path: Path) -> dict[str, float]:
    """Phase -> megagen's critical µs from a waterfall.md's first table (a layer's phases are medians)."""
    out = {}
    for line in path.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and cells[0] and not cells[0].startswith(("phase", "---")):
            try:
                out.setdefault(cells[0].split(" (median")[0], float(cells[3]))
            except ValueError:
                continue
    return out


def bounds(model: str, batch: int, context: int, waterfall: Path | None) -> str:
    config = preset_config(model)
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    expected = op_bytes(config, context, batch)
    one = phase_tensors(config, batch, context, torch.bfloat16, device)
    for phase, tensors in one.items():  # the tensors read what the waterfall counts
        assert read_bytes(phase, tensors) == sum(expected[op] for op in PHASE_OPS[phase]), phase
    megagen = waterfall_critical(waterfall) if waterfall else {}
    if not cuda:
        rows = [f"| {p} | {' · '.join(str(tuple(t.shape)) for t in ts)} | {read_bytes(p, ts) / 1e6:.2f} |"
                for p, ts in one.items()]
        return "\n".join([f"### {model}, batch {batch}, context {context}: no GPU, shapes and bytes only", "",
                          "| phase | tensors | MB read |", "|---|---|---|", *rows]) + "\n"
    bandwidth = copy_bandwidth(device, True)
    l2 = torch.cuda.get_device_properties(device).L2_cache_size
    rows = []
    for phase, tensors in one.items():
        size = read_bytes(phase, tensors)
        copies = [tensors] + [[t.clone().normal_() for t in tensors] for _ in range(math.ceil(2 * l2 / size) - 1)]
        us = time_per_launch(phase, copies)
        floor = size / bandwidth * 1e6
        mg = megagen.get(phase)
        rows.append(f"| {phase} | {size / 1e6:.2f} | {floor:.2f} | {us:.2f} ({floor / us:.0%} of floor) | "
                    + (f"{mg:.2f} | {mg / us:.2f}× |" if mg is not None else "— | — |"))
        del copies
    head = (f"### {model}, batch {batch}, context {context}, {torch.cuda.get_device_name()}, copy bandwidth "
            f"{bandwidth / 1e9:.0f} GB/s, L2 {l2 / 2**20:.0f} MiB")
    return "\n".join([head, "", "| phase | MB read | floor µs | library kernel µs a launch | megagen critical µs "
                      "| megagen / library |", "|---|---|---|---|---|---|", *rows]) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="Qwen3-0.6B", help="a preset of models/presets.py")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--context", type=int, default=512)
    ap.add_argument("--waterfall", type=Path, default=None, help="profile_decode.py's waterfall.md, same model/GPU")
    ap.add_argument("--out", type=Path, default=None, help="also write the table here")
    args = ap.parse_args()
    table = bounds(args.model, args.batch, args.context, args.waterfall)
    print(table)
    if args.out:
        args.out.write_text(table)


if __name__ == "__main__":
    main()
