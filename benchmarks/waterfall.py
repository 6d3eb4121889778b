"""Per-layer waterfall of a profiled decode step: where each phase's critical-path time goes.

    python benchmarks/waterfall.py PROFILE.npz --model Qwen3-0.6B --context 512 --bandwidth-gbps 4230

``benchmarks/profile_decode.py`` writes one beside its profile (``--tp N`` for one rank's of ``megagen.bench_tp
--profile``). For every phase of a layer (q/k/v, RoPE, attention, its combine, o, gate/up, down, at tp > 1 each
allreduce; ops of one phase run side by side) it splits the phase's time on the critical path, from the previous
phase's last tile end to its own, into four parts that add up to it:

- floor: the bytes the phase reads (weights, KV cache) over the copy bandwidth;
- slow streaming: the CTAs' mean busy time in the phase (sum of its tiles' run times over the CTAs) beyond
  the floor; negative where the data came from L2;
- uneven waves: the busiest CTA's run time in the phase beyond the mean (tiles that do not fill whole
  waves, or tiles of unequal length);
- latency: the rest: dependency wake-up, dispatch, and the wait for the phase's last tile (the tail).

Phases can overlap (down's first tiles start while up's last run), so a phase's critical time can be
shorter than its busy time, and a phase that ends before the one before it (off the critical path) has none;
the critical times add up to the step's span either way.

A second table shows each phase's boundary with the one before (its last tile's end): how long before it
a tile's CTA reached the tile (median; a CTA issues the tile's prefetch then, and its poll is answered only
once the prefetch has landed: BENCHMARKS.md, the poll probe), how many tiles were reached after it, how
long after it the tiles' waits were done (median and last), and a tile's median run time after its wait.

A third groups each phase's tiles by the phase of the task their CTA ran just before (a CTA reaches a tile, and
issues its prefetch, only when that task is done): per layer how many, when they were reached and done
(medians, from the phase before's end), and what share of them is among the phase's last tenth to finish.

A fourth splits that run for the phases whose tiles mark their progress (``megagen.profiler_device.mark``: the
GEMV, attention and combine tiles): from the wait to the input ready (a GEMV's x loaded and RMSNorm pass done, an
attention's queries normalised and rotated, a combine's split maxima arrived), to the last products (a GEMV's
weights streamed, an attention's softmax over its keys done, a combine's splits merged), to the stores issued,
and to the end (the release: a CTA barrier, a fence, the counters); and how near the copy rate the phase's tiles
stream once started (its bytes over its waves of the median time from the input ready to the last products). On an
H200 Qwen3-30B-A3B's expert gate/up tiles reached 98% of it (2026-11-28, BENCHMARKS.md), so what that phase loses is
its start and tail. For GEMV tiles that stream their weights a block a loop step (not staged), it also gives a tile's
loop steps (``megagen.tasks.linear.loop_steps``, kept in profiles since 2026-11-28) and that median time over them:
on an H200 a step took 0.77-0.85 us whatever its bytes, so a phase whose tiles take almost empty steps (o's 36-row
tiles in 32-row blocks) is bound by its steps, not by bandwidth.
"""
from __future__ import annotations

import argparse
import re
from collections import defaultdict
from pathlib import Path

import numpy as np

from megagen.errors import MegagenError
from megagen.profiler import CTA, Profile
from megagen.tasks.moe import expected_experts

# op name (after "L{i}.") -> phase; ops of one phase have no dependencies between them, and a tensor-parallel
# projection's allreduce is a phase of its own, from the projection's last tile to its own (rope_q / rope_kv:
# profiles from before the attention partials applied RoPE themselves, as committed under benchmarks/results; early
# routing's router_x beside q/k/v, router_a beside o and routing_weights beside the experts' gate/up)
PHASE_OF = {"q_proj": "q/k/v", "k_proj": "q/k/v", "v_proj": "q/k/v", "rope_q": "rope", "rope_kv": "rope",
            "attention": "attention", "attention_combine": "combine", "o_proj": "o", "o_proj.allreduce": "o allreduce",
            "gate_proj": "gate/up", "up_proj": "gate/up", "down_proj": "down", "down_proj.allreduce": "down allreduce",
            "mlp": "mlp (gate/up/down)",
            "router": "router", "route": "route", "experts_gate": "experts gate/up", "experts_up": "experts gate/up",
            "experts_down": "experts down", "experts_combine": "experts combine",
            "experts_combine.allreduce": "experts allreduce", "router_x": "q/k/v", "router_a": "o",
            "routing_weights": "experts gate/up"}
_LAYER_OP = re.compile(r"L(\d+)\.(.+)")


def op_bytes(config, context: int, batch: int = 1, itemsize: int = 2) -> dict[str, int]:
    """Bytes each op of one layer reads from memory (by op name after ``L{i}.``), and the lm_head's; of a
    mixture-of-experts layer the router and the experts the step routes to: at batch B the expected union of the
    rows' under uniform routing, as ``megagen bench``'s floor counts them (megagen streams each once,
    ``moe.expert_union``)."""
    hidden, inter = config.hidden_size, config.intermediate_size
    heads, kv = config.num_attention_heads, config.num_key_value_heads
    d = getattr(config, "head_dim", None) or hidden // heads
    w = itemsize
    return {"q_proj": heads * d * hidden * w, "k_proj": kv * d * hidden * w, "v_proj": kv * d * hidden * w,
            "attention": 2 * batch * kv * context * d * w, "o_proj": hidden * heads * d * w,
            "gate_proj": inter * hidden * w, "up_proj": inter * hidden * w, "down_proj": hidden * inter * w,
            "mlp": 3 * inter * hidden * w,
            "lm_head": config.vocab_size * hidden * w, **_expert_bytes(config, heads * d, batch, w)}


def _expert_bytes(config, attention_width: int, batch: int, w: int) -> dict[str, int]:
    """A sparse layer's ops' bytes: the router (or early routing's router_x over the stream and router_a over the
    attention's output, ``megagen.trace.Layer.early_router``) and the routed experts'."""
    experts = getattr(config, "num_experts", None) or getattr(config, "num_local_experts", None)
    if not experts:
        return {}
    hidden = config.hidden_size
    routed = expected_experts(experts, config.num_experts_per_tok, batch)
    inter = getattr(config, "moe_intermediate_size", None) or config.intermediate_size
    return {"router": experts * hidden * w, "router_x": experts * hidden * w,
            "router_a": experts * attention_width * w, "experts_gate": round(routed * inter * hidden * w),
            "experts_up": round(routed * inter * hidden * w), "experts_down": round(routed * hidden * inter * w)}


def _layer_and_kind(op_name: str) -> tuple[int | None, str]:
    """("L3.q_proj") -> (3, "q_proj"); an op outside the layers -> (None, its name)."""
    m = _LAYER_OP.fullmatch(op_name)
    return (int(m.group(1)), m.group(2)) if m else (None, op_name)


def phases_of(profile: Profile) -> list[tuple[int | None, str, np.ndarray]]:
    """(layer or None, phase name, its tasks) in program order; ops outside layers are phases of their own."""
    out, index = [], {}
    for k, name in enumerate(profile.op_names):
        layer, kind = _layer_and_kind(name)
        key = (layer, PHASE_OF.get(kind, kind) if layer is not None else kind)
        tasks = np.arange(profile.op_offsets[k], profile.op_offsets[k + 1])
        if key in index:
            out[index[key]] = (*key, np.concatenate([out[index[key]][2], tasks]))
        else:
            index[key] = len(out)
            out.append((*key, tasks))
    return out


def previous_on_cta(profile: Profile) -> np.ndarray:
    """Each task's predecessor on its CTA, the task that CTA ran just before it (-1 for a CTA's first)."""
    cta = profile.rows[:, CTA]
    order = np.lexsort((profile.start, cta))
    prev = np.full(profile.num_tasks, -1, np.int64)
    same = cta[order[1:]] == cta[order[:-1]]
    prev[order[1:][same]] = order[:-1][same]
    return prev


def waterfall(profile: Profile, config, context: int, bandwidth: float, batch: int = 1, tp: int = 1) -> list[dict]:
    """One row per phase, in program order: critical time and its floor / slow streaming / uneven waves /
    latency split (ns), plus bytes and tiles. ``bandwidth`` in bytes per second. A profile of one rank at tensor
    parallelism ``tp`` counts a tp-th of every op's bytes, as ``megagen.bench_tp``'s floor does."""
    if profile.clock != "globaltimer":
        raise MegagenError("a waterfall needs a GPU profile (globaltimer clock), not the interpreter's logical one")
    if not isinstance(tp, int) or tp < 1:
        raise MegagenError(f"tp must be a positive int (the tensor parallelism the profile ran at), got {tp!r}")
    sizes = {op: n // tp for op, n in op_bytes(config, context, batch).items()}
    ctas = np.unique(profile.rows[:, CTA]).size
    run, start, wait_done, end, cta = profile.run, profile.start, profile.wait_done, profile.end, profile.rows[:, CTA]
    # per task: wait done -> each mark -> end, where the task recorded every mark; and its tile's loop steps
    intervals = np.diff(np.column_stack([wait_done, profile.marks, end]), axis=1)
    marked = ~np.isnan(intervals).any(axis=1)
    loops = (np.zeros(profile.num_tasks, np.int64) if profile.op_steps is None
             else profile.op_steps[profile.task_op])
    phases = phases_of(profile)
    phase_of_task = np.empty(profile.num_tasks, dtype=object)
    for _, phase, tasks in phases:
        phase_of_task[tasks] = phase
    prev = previous_on_cta(profile)
    after = np.where(prev >= 0, phase_of_task[np.maximum(prev, 0)], "its CTA's first")
    rows, prev_end = [], 0
    for layer, phase, tasks in phases:
        names = {profile.op_names[k] for k in np.unique(profile.task_op[tasks])}
        nbytes = sum(sizes.get(_layer_and_kind(n)[1], 0) for n in names)
        phase_end = int(end[tasks].max())
        critical = max(phase_end - prev_end, 0)  # none for a phase ending before the one before it
        floor = nbytes / bandwidth * 1e9
        busy = run[tasks].sum() / ctas
        busiest = max(np.bincount(cta[tasks], weights=run[tasks]))
        woke = wait_done[tasks] - prev_end
        last = np.zeros(tasks.size, bool)
        tenth = -(-tasks.size // 10)
        last[np.argsort(end[tasks], kind="stable")[-tenth:]] = True  # the last tenth to finish
        before, came_after = {}, after[tasks]  # by the phase each tile's CTA ran before it, in order of appearance
        for a in dict.fromkeys(came_after):
            m = came_after == a
            before[a] = dict(tiles=int(m.sum()), lead=float(np.median(prev_end - start[tasks[m]])),
                             done=float(np.median(end[tasks[m]] - prev_end)), last=int(last[m].sum()))
        marks = np.median(intervals[tasks[marked[tasks]]], axis=0) if marked[tasks].any() else None
        # a marked GEMV tile's loop steps, and its time from the input ready to the last products over them: the
        # time a step takes, bytes or not (a phase of few, short steps is bound by their round trips)
        looped = tasks[marked[tasks] & (loops[tasks] > 0)]
        loop_steps = float(np.median(loops[looped])) if looped.size else None
        step_time = float(np.median(intervals[looped, 1] / loops[looped])) if looped.size else None
        # the phase's bytes over its tiles' median time from the input ready to the last products, a wave of tiles at
        # a time, as a share of the copy rate: how near it the tiles stream once started (an estimate, above 1 where
        # tiles that finish early leave the others more bandwidth)
        streaming = None
        if marks is not None and nbytes and marks[1] > 0:
            streaming = floor / (-(-tasks.size // ctas) * marks[1])
        rows.append(dict(layer=layer, phase=phase, tiles=tasks.size, bytes=nbytes, critical=critical, floor=floor,
                         slow_streaming=busy - floor, uneven_waves=busiest - busy, latency=critical - busiest,
                         lead=float(np.median(prev_end - start[tasks])),
                         arrived_late=int((start[tasks] > prev_end).sum()), wake=float(np.median(woke)),
                         last_wake=float(woke.max()), tile_run=float(np.median(run[tasks])), before=before,
                         marks=marks, streaming=streaming, loop_steps=loop_steps, step_time=step_time))
        prev_end = max(prev_end, phase_end)
    return rows


def layer_table(rows: list[dict]) -> list[dict]:
    """Per phase of a layer, the median over the model's layers (phases outside layers as they are)."""
    by_phase = defaultdict(list)
    for r in rows:
        by_phase[(r["layer"] is None, r["phase"])].append(r)
    table = []
    for (outside, phase), rs in by_phase.items():
        med = {k: float(np.median([r[k] for r in rs])) for k in (
            "tiles", "bytes", "critical", "floor", "slow_streaming", "uneven_waves", "latency", "lead", "arrived_late",
            "wake", "last_wake", "tile_run")}
        marks = [r["marks"] for r in rs if r.get("marks") is not None]
        med["marks"] = np.median(marks, axis=0) if marks else None
        for key in ("streaming", "loop_steps", "step_time"):
            values = [r[key] for r in rs if r.get(key) is not None]
            med[key] = float(np.median(values)) if values else None
        med["before"] = {}
        for a in dict.fromkeys(a for r in rs for a in r["before"]):
            bs = [r["before"][a] for r in rs if a in r["before"]]
            tiles = sum(b["tiles"] for b in bs)
            med["before"][a] = dict(tiles=tiles / len(rs), lead=float(np.median([b["lead"] for b in bs])),
                                    done=float(np.median([b["done"] for b in bs])),
                                    last=sum(b["last"] for b in bs) / tiles)
        table.append(dict(phase=phase, layers=0 if outside else len(rs), **med))
    return table


def markdown(rows: list[dict], title: str) -> str:
    table = layer_table(rows)
    total = sum(r["critical"] for r in rows)
    layer = [r for r in table if r["layers"]]
    lines = [f"### {title}", "",
             f"Step span {total / 1e3:.1f} µs; a layer (median phases) {sum(r['critical'] for r in layer) / 1e3:.1f} µs "
             f"against a floor of {sum(r['floor'] for r in layer) / 1e3:.1f} µs.", "",
             "| phase | tiles | MB read | critical µs | floor µs | slow streaming µs | uneven waves µs | latency µs |",
             "|---|---|---|---|---|---|---|---|"]
    names = [f"{r['phase']} (median of {r['layers']} layers)" if r["layers"] else r["phase"] for r in table]
    for name, r in zip(names, table):
        lines.append(f"| {name} | {r['tiles']:.0f} | {r['bytes'] / 1e6:.2f} | {r['critical'] / 1e3:.2f} | "
                     f"{r['floor'] / 1e3:.2f} | {r['slow_streaming'] / 1e3:.2f} | {r['uneven_waves'] / 1e3:.2f} | "
                     f"{r['latency'] / 1e3:.2f} |")
    lines += ["", "Boundaries with the phase before (its last tile's end): when CTAs reached this phase's tiles (and "
              "issued their prefetch), and when the tiles' waits were done.", "",
              "| phase | tiles | reached before that end, median µs | reached after it, tiles | waits done after it, "
              "median / last µs | tile run after the wait, median µs |", "|---|---|---|---|---|---|"]
    for name, r in zip(names, table):
        lines.append(f"| {name} | {r['tiles']:.0f} | {r['lead'] / 1e3:.2f} | {r['arrived_late']:.0f} | "
                     f"{r['wake'] / 1e3:.2f} / {r['last_wake'] / 1e3:.2f} | {r['tile_run'] / 1e3:.2f} |")
    lines += ["", "Tiles by the phase of the task their CTA ran just before: per layer, when they were reached and done "
              "(medians, µs from the phase before's end), and the share of them among the phase's last tenth to "
              "finish.", "",
              "| phase | after | tiles | reached before that end | done after it | in the last tenth |",
              "|---|---|---|---|---|---|"]
    for name, r in zip(names, table):
        for a, b in r["before"].items():
            lines.append(f"| {name} | {a} | {b['tiles']:.1f} | {b['lead'] / 1e3:.2f} | {b['done'] / 1e3:.2f} | "
                         f"{100 * b['last']:.0f}% |")
    marked = [(name, r) for name, r in zip(names, table) if r["marks"] is not None]
    if marked:
        lines += ["", "Inside the tiles that mark their progress: median µs from the wait to the input ready (a "
                  "GEMV's x loaded and RMSNorm pass done, an attention's queries rotated, a combine's split maxima "
                  "arrived), from there to the last products (the weights streamed, the softmax over the keys done, "
                  "the splits merged), to the stores issued, and to the end (the release); and the phase's bytes over "
                  "its waves of that median time from the input ready to the last products, as a share of the copy "
                  "rate: near 100% or above (tiles that finish early leave the others more), the tiles stream at the "
                  "copy rate once started, and what the phase loses is their start and tail. Last, for GEMV tiles "
                  "that stream their weights a block a loop step (not staged), a tile's loop steps and that median "
                  "time over them: a step that takes as long whatever its bytes is a round trip, and a phase of "
                  "such steps gains from fewer, fuller ones.", "",
                  "| phase | wait → input ready | → last products | → stores issued | → end "
                  "| streaming, of the copy rate | loop steps a tile, µs a step |",
                  "|---|---|---|---|---|---|---|"]
        for name, r in marked:
            rate = "" if r["streaming"] is None else f"{100 * r['streaming']:.0f}%"
            step = "" if r.get("step_time") is None else f"{r['loop_steps']:.0f}, {r['step_time'] / 1e3:.2f}"
            lines.append(f"| {name} | " + " | ".join(f"{v / 1e3:.2f}" for v in r["marks"]) + f" | {rate} | {step} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    from megagen import models
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("profile", help="profile.npz written by benchmarks/profile_decode.py")
    ap.add_argument("--model", required=True, help="the preset the profile was taken of")
    ap.add_argument("--context", type=int, default=512)
    ap.add_argument("--bandwidth-gbps", type=float, required=True, help="copy bandwidth measured on that GPU")
    ap.add_argument("--tp", type=int, default=1, help="the profile is one rank's at this tensor parallelism "
                    "(megagen.bench_tp --profile)")
    args = ap.parse_args(argv)
    rows = waterfall(Profile.load(args.profile), models.preset_config(args.model), args.context,
                     args.bandwidth_gbps * 1e9, tp=args.tp)
    tp = f", tp={args.tp} (one rank)" if args.tp > 1 else ""
    print(markdown(rows, f"{args.model}{tp}, {Path(args.profile).parent.name}"))


if __name__ == "__main__":
    main()
