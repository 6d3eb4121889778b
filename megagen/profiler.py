"""Host side of the timeline profiler: a launch's per-task rows, as a Chrome trace, a plot and a summary.

A MegaKernel built with ``profile=True`` records, for every task of each launch, the CTA and SM that ran it
and three timestamps: start (the task is fetched, before its prefetch and wait), wait done (its dependencies
are satisfied) and end (after release_tile), and the marks its tile function recorded inside its run
(``megagen.profiler_device.mark``; GEMV and attention tiles mark input ready, products done, stores issued);
``MegaKernel.profile()`` returns the latest launch's as a ``Profile``. On a GPU timestamps are the global timer
in nanoseconds. Under Triton's interpreter they are a logical clock: each event takes the next number, so they
give the order of events, not their duration, and the SM is the virtual CTA.

A profile needs only its rows and the graph's op names, task types and tile counts (and, for the waterfall, each
op's loop steps a tile: ``megagen.tasks.linear.loop_steps``), so it can be saved on a GPU machine (``save``) and read,
converted and plotted anywhere (``load``, ``from_buffer``).
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from megagen.errors import MegagenError
from megagen.profiler_device import PROFILE_FIELDS, PROFILE_MARK_SLOT, PROFILE_MARKS
from megagen.tasks.linear import loop_steps

CLOCKS = ("globaltimer", "logical")
TASK, CTA, SM, T_START, T_WAIT_DONE, T_END = range(6)
T_MARKS = PROFILE_MARK_SLOT.value  # the first mark's column


@dataclasses.dataclass
class Profile:
    """One launch: ``rows[task]`` = (task, cta, sm, t_start, t_wait_done, t_end, marks), tasks numbered op by op
    (rows without marks, as profiles saved before marks existed have them, read as marking nothing)."""

    graph_name: str
    op_names: list[str]
    task_types: list[str]  # per op: the name of its registered task
    op_offsets: np.ndarray  # [ops + 1]: op k has tasks op_offsets[k]:op_offsets[k + 1]
    rows: np.ndarray  # [tasks, PROFILE_FIELDS] int64
    clock: str  # "globaltimer" (ns) or "logical" (event order)
    op_steps: np.ndarray | None = None  # per op: a tile's loop steps (linear.loop_steps); None in older profiles

    def __post_init__(self):
        self.rows = np.asarray(self.rows, np.int64)
        self.op_offsets = np.asarray(self.op_offsets, np.int64)
        if self.op_steps is not None:
            self.op_steps = np.asarray(self.op_steps, np.int64)
            if self.op_steps.shape != (len(self.op_names),):
                raise MegagenError(f"op_steps needs one count per op ({len(self.op_names)}), got shape "
                                   f"{self.op_steps.shape}")
        if self.clock not in CLOCKS:
            raise MegagenError(f"clock must be one of {CLOCKS}, got {self.clock!r}")
        n = int(self.op_offsets[-1])
        if self.rows.ndim == 2 and self.rows.shape[1] == T_MARKS:
            self.rows = np.concatenate([self.rows, np.zeros((self.rows.shape[0], PROFILE_MARKS.value), np.int64)], 1)
        if self.rows.shape != (n, PROFILE_FIELDS.value):
            raise MegagenError(f"a profile of {n} tasks needs rows of shape ({n}, {PROFILE_FIELDS.value}), "
                               f"got {self.rows.shape}")
        missing = np.flatnonzero(self.rows[:, TASK] != np.arange(n))
        if missing.size:
            raise MegagenError(f"the profile has no record of {missing.size} of {n} tasks (first: "
                               f"{', '.join(self.describe(int(t)) for t in missing[:3])}); "
                               "did a launch of the profiling MegaKernel finish?")

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def from_buffer(cls, rows, graph, clock: str = "globaltimer") -> Profile:
        """A profile from recorded rows (array-like ``[tasks, PROFILE_FIELDS]``) and the TaskGraph they were recorded
        for."""
        if hasattr(rows, "cpu"):
            rows = rows.cpu().numpy()
        offsets = np.cumsum([0] + [op.num_tiles for op in graph.ops])
        steps = np.array([loop_steps(op.plan.constexprs) for op in graph.ops], np.int64)
        return cls(graph.name, [op.name for op in graph.ops], [op.task.name for op in graph.ops], offsets, rows,
                   clock, steps)

    def save(self, path) -> None:
        """Write the profile as compressed .npz (a sixth of the raw size: profiles are committed as evidence), for
        ``load`` on another machine."""
        steps = {} if self.op_steps is None else {"op_steps": self.op_steps}
        np.savez_compressed(path, graph_name=self.graph_name, op_names=np.array(self.op_names, dtype=str),
                            task_types=np.array(self.task_types, dtype=str), op_offsets=self.op_offsets,
                            rows=self.rows, clock=self.clock, **steps)

    @classmethod
    def load(cls, path) -> Profile:
        """A profile written by ``save`` (on a GPU machine, say), checked as when it was recorded."""
        with np.load(path) as f:
            return cls(str(f["graph_name"]), f["op_names"].tolist(), f["task_types"].tolist(), f["op_offsets"],
                       f["rows"], str(f["clock"]), f["op_steps"] if "op_steps" in f.files else None)

    # -- per task ----------------------------------------------------------------------------
    @property
    def num_tasks(self) -> int:
        return self.rows.shape[0]

    @property
    def task_op(self) -> np.ndarray:
        return np.repeat(np.arange(len(self.op_names)), np.diff(self.op_offsets))

    @property
    def task_tile(self) -> np.ndarray:
        return np.arange(self.num_tasks) - self.op_offsets[self.task_op]

    @property
    def task_type(self) -> np.ndarray:
        return np.array(self.task_types, dtype=object)[self.task_op]

    @property
    def start(self) -> np.ndarray:
        """Start times relative to the launch's first task start (so is every time below)."""
        return self.rows[:, T_START] - self.rows[:, T_START].min()

    @property
    def wait_done(self) -> np.ndarray:
        return self.rows[:, T_WAIT_DONE] - self.rows[:, T_START].min()

    @property
    def end(self) -> np.ndarray:
        return self.rows[:, T_END] - self.rows[:, T_START].min()

    @property
    def marks(self) -> np.ndarray:
        """[tasks, PROFILE_MARKS] times of the marks each task's tile recorded, as ``start``; NaN where it recorded
        none."""
        raw = self.rows[:, T_MARKS:].astype(np.float64)
        return np.where(raw > 0, raw - self.rows[:, T_START].min(), np.nan)

    @property
    def wait(self) -> np.ndarray:
        """Time each task spent waiting on its dependencies (its prefetch included)."""
        return self.rows[:, T_WAIT_DONE] - self.rows[:, T_START]

    @property
    def run(self) -> np.ndarray:
        """Time each task spent in its tile function and release."""
        return self.rows[:, T_END] - self.rows[:, T_WAIT_DONE]

    @property
    def span(self) -> int:
        """From the first task start to the last task end."""
        return int(self.end.max())

    def describe(self, task: int) -> str:
        return f"{self.op_names[self.task_op[task]]}[tile {self.task_tile[task]}]"

    def idle_tail(self) -> dict[int, int]:
        """Per CTA: launch end minus the end of the last task that CTA ran (several CTAs may share an SM)."""
        cta, end, span = self.rows[:, CTA], self.end, self.span
        return {int(c): span - int(end[cta == c].max()) for c in np.unique(cta)}

    # -- output ------------------------------------------------------------------------------
    def format_time(self, t: float) -> str:
        if self.clock == "logical":
            return f"{t:.4g} events"
        return f"{t / 1e3:.2f} us" if t < 1e6 else f"{t / 1e6:.3f} ms"

    def to_chrome_trace(self, path) -> None:
        """Write Chrome trace JSON (open it in Perfetto or chrome://tracing).

        A process per SM, a thread per CTA; per task a "wait" slice (when it waited) and a run slice named
        ``op[tile]`` in the task type's category, both with the task's id, op, tile and task type as args.
        Trace time is microseconds; a logical clock's events are written one microsecond apart.
        """
        scale = 1e-3 if self.clock == "globaltimer" else 1.0
        start, wait_done, end = self.start * scale, self.wait_done * scale, self.end * scale
        events = []
        for s, c in sorted({(int(s), int(c)) for s, c in self.rows[:, [SM, CTA]]}):
            events.append(dict(ph="M", name="process_name", pid=s, args=dict(name=f"SM {s}")))
            events.append(dict(ph="M", name="process_sort_index", pid=s, args=dict(sort_index=s)))
            events.append(dict(ph="M", name="thread_name", pid=s, tid=c, args=dict(name=f"CTA {c}")))
        ops, tiles, types = self.task_op, self.task_tile, self.task_type
        for t in range(self.num_tasks):
            name = f"{self.op_names[ops[t]]}[{tiles[t]}]"
            track = dict(pid=int(self.rows[t, SM]), tid=int(self.rows[t, CTA]))
            args = dict(task=t, op=self.op_names[ops[t]], tile=int(tiles[t]), task_type=types[t])
            if wait_done[t] > start[t]:
                events.append(dict(ph="X", name=f"wait {name}", cat="wait", ts=float(start[t]),
                                   dur=float(wait_done[t] - start[t]), args=args, **track))
            events.append(dict(ph="X", name=name, cat=types[t], ts=float(wait_done[t]),
                               dur=float(end[t] - wait_done[t]), args=args, **track))
        trace = dict(traceEvents=events, displayTimeUnit="ns",
                     otherData=dict(graph=self.graph_name, clock=self.clock))
        Path(path).write_text(json.dumps(trace))

    def plot(self, path, *, dpi: int = 100) -> None:
        """Write a PNG timeline: a row per SM (and CTA), run time coloured by task type, waits hatched grey."""
        from matplotlib import colormaps  # imported here: building a Profile needs no plotting library
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch
        lanes = sorted({(int(s), int(c)) for s, c in self.rows[:, [SM, CTA]]})
        lane_of = {lane: i for i, lane in enumerate(lanes)}
        y = np.array([lane_of[int(s), int(c)] for s, c in self.rows[:, [SM, CTA]]])
        scale, unit = (1e-3, "us") if self.clock == "globaltimer" else (1.0, "logical clock: events, not time")
        start, wait_done, end = self.start * scale, self.wait_done * scale, self.end * scale
        names = list(dict.fromkeys(self.task_types))
        colors = colormaps["tab10" if len(names) <= 10 else "tab20"].colors

        fig = Figure(figsize=(12, 1.5 + 0.22 * len(lanes)))
        ax = fig.add_subplot()
        ax.barh(y, wait_done - start, left=start, height=0.8, color="0.85", hatch="////", edgecolor="0.6",
                linewidth=0)
        types = self.task_type
        for k, name in enumerate(names):
            m = types == name
            ax.barh(y[m], end[m] - wait_done[m], left=wait_done[m], height=0.8, color=colors[k % len(colors)])
        ax.set_yticks(range(len(lanes)), [f"SM {s} / CTA {c}" for s, c in lanes],
                      fontsize=8 if len(lanes) <= 40 else 5)
        ax.set_ylim(len(lanes) - 0.5, -0.5)
        ax.set_xlabel(f"time ({unit})")
        ax.set_title(f"MegaKernel timeline of '{self.graph_name}': {self.num_tasks} tasks, "
                     f"span {self.format_time(self.span)}")
        handles = [Patch(color=colors[k % len(colors)], label=n) for k, n in enumerate(names)]
        handles.append(Patch(facecolor="0.85", hatch="////", edgecolor="0.6", label="waiting on dependencies"))
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
        fig.tight_layout()
        fig.savefig(path, dpi=dpi)

    def summary(self, top: int = 3) -> str:
        """Launch span, run and wait time per task type, idle tail per CTA, and the biggest losses.

        A task's wait runs from its start (before its prefetch is issued) to its dependencies being met."""
        span, fmt = self.span, self.format_time
        sms = np.unique(self.rows[:, SM])
        ctas = np.unique(self.rows[:, CTA])
        clock = "logical clock: event order, not time" if self.clock == "logical" else "globaltimer"
        lines = [f"Profile of '{self.graph_name}': {self.num_tasks} tasks on {ctas.size} CTAs, {sms.size} SMs "
                 f"({clock})",
                 f"launch span: {fmt(span)}",
                 f"{'task type':<20} {'tasks':>6} {'run total':>14} {'run mean':>14} {'wait total':>14}"]
        types, run, wait = self.task_type, self.run, self.wait
        per_type = {}
        for name in dict.fromkeys(self.task_types):
            m = types == name
            per_type[name] = int(run[m].sum())
            lines.append(f"{name:<20} {int(m.sum()):>6} {fmt(run[m].sum()):>14} {fmt(run[m].mean()):>14} "
                         f"{fmt(wait[m].sum()):>14}")
        tail = self.idle_tail()
        worst = max(tail, key=tail.get)
        lines.append(f"idle tail per CTA (launch end - its last task end): mean {fmt(np.mean(list(tail.values())))}, "
                     f"max {fmt(tail[worst])} (CTA {worst})")
        losses = [("waiting on dependencies", int(wait.sum())), ("idle tail", sum(tail.values()))]
        losses += [(f"running {name}", t) for name, t in sorted(per_type.items(), key=lambda kv: -kv[1])[:top]]
        lines.append(f"biggest losses (share of CTA-time = {ctas.size} CTAs x span):")
        for i, (what, t) in enumerate(sorted(losses, key=lambda kv: -kv[1]), 1):
            lines.append(f"  {i}. {what}: {fmt(t)} ({100 * t / max(span * ctas.size, 1):.1f}%)")
        return "\n".join(lines)


__all__ = ["Profile"]
