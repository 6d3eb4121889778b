"""End-to-end: graphs compiled into one MegaKernel must compute what plain PyTorch computes, op by op.

Every case builds a fresh graph (``Case``): graph inputs with their original
values (restored before each run, since some graphs overwrite their inputs),
scratch buffers (NaN-poisoned before each run, so unwritten elements show) and
the expected outputs computed with torch in float64 from the original inputs.
"""
from __future__ import annotations

import dataclasses
import re

import networkx as nx
import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import megagen
from megagen.backend import interpreting
from megagen.tasks import add, gemv, mul, scale
from mgutil import (HAZARD_SCHEDULERS, Backwards, BackwardsQueue, StuckAfterFirstOp, assert_matches,
                    make_scheduler, poison, rand, weights)

# A wait that can never be satisfied gives up after this many polls (fast on a GPU; the interpreter's
# interleaved driver detects a stuck sweep without spinning).
FEW_SPINS = 1 << 12
GEMV_TOL = dict(rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------------------------------------
# User-registered tasks (module level: a task name may be registered only once per process)
# ---------------------------------------------------------------------------------------------------------

@triton.jit
def rev_copy_tile(x, out, n, tile, BLOCK: tl.constexpr):
    offs = tile * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(x + (n - 1 - offs), mask=m), mask=m)


def rev_copy_plan(x, out, BLOCK=16):
    if x.dim() != 1 or x.shape != out.shape:
        raise megagen.TaskDefinitionError("rev_copy needs two 1-D tensors of one length")
    n = x.shape[0]
    t = megagen.tile_arange(megagen.cdiv(n, BLOCK))
    # out[t*B : t*B+B] = x[n-(t+1)*B : n-t*B]; the first read box starts below 0 for a tail tile (clipped).
    return megagen.TilePlan(t.size, reads={"x": ((n - (t + 1) * BLOCK, BLOCK),)},
                            writes={"out": ((t * BLOCK, BLOCK),)}, scalars={"n": n}, constexprs={"BLOCK": BLOCK})


rev_copy = megagen.register_task("t_rev_copy", rev_copy_tile, inputs=("x",), outputs=("out",), plan=rev_copy_plan)


@triton.jit
def rowmul_prefetch(v, N, BLOCK_N: tl.constexpr):
    cols = tl.arange(0, BLOCK_N)
    return tl.load(v + cols, mask=cols < N, other=0.0)


@triton.jit
def rowmul_tile(x, out, tile, M, N, prefetched, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tile * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    m = (rows[:, None] < M) & (cols[None, :] < N)
    xv = tl.load(x + rows[:, None] * N + cols[None, :], mask=m)
    tl.store(out + rows[:, None] * N + cols[None, :], xv * prefetched[None, :], mask=m)


def rowmul_plan(x, v, out, BLOCK_M=4):
    """out[M, N] = x * v[None, :], one tile per BLOCK_M rows; v (a weight) is prefetched."""
    if x.dim() != 2 or not x.is_contiguous() or out.shape != x.shape or v.shape != (x.shape[1],):
        raise megagen.TaskDefinitionError("rowmul needs contiguous x [M, N], out [M, N] and v [N]")
    m, n = x.shape
    t = megagen.tile_arange(megagen.cdiv(m, BLOCK_M))
    rows = (t * BLOCK_M, BLOCK_M)
    return megagen.TilePlan(t.size, reads={"x": (rows, megagen.ALL), "v": (megagen.ALL,)},
                            writes={"out": (rows, megagen.ALL)}, scalars={"M": m, "N": n},
                            constexprs={"BLOCK_M": BLOCK_M, "BLOCK_N": triton.next_power_of_2(n)})


rowmul = megagen.register_task("t_rowmul", rowmul_tile, inputs=("x", "v"), outputs=("out",), plan=rowmul_plan,
                               prefetch=rowmul_prefetch)


@triton.jit
def colscale_tile(x, out, tile, M, N, alpha, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.arange(0, BLOCK_M)
    cols = tile * BLOCK_N + tl.arange(0, BLOCK_N)
    m = (rows[:, None] < M) & (cols[None, :] < N)
    xv = tl.load(x + rows[:, None] * N + cols[None, :], mask=m)
    tl.store(out + rows[:, None] * N + cols[None, :], xv * alpha, mask=m)


def colscale_plan(x, out, alpha, BLOCK_N=4):
    """out[:, cols] = alpha * x[:, cols], one tile per BLOCK_N columns (boxes are not contiguous in memory)."""
    m, n = x.shape
    t = megagen.tile_arange(megagen.cdiv(n, BLOCK_N))
    cols = (t * BLOCK_N, BLOCK_N)
    return megagen.TilePlan(t.size, reads={"x": (megagen.ALL, cols)}, writes={"out": (megagen.ALL, cols)},
                            scalars={"M": m, "N": n, "alpha": float(alpha)},
                            constexprs={"BLOCK_M": triton.next_power_of_2(m), "BLOCK_N": BLOCK_N})


colscale = megagen.register_task("t_colscale", colscale_tile, inputs=("x",), outputs=("out",), plan=colscale_plan)


@triton.jit
def add_const_tile(x, out, n, b, tile, BLOCK: tl.constexpr):
    offs = tile * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=m) + b, mask=m)


def add_const_plan(x, out, b, BLOCK=16):
    """out = x + b, with ``b`` passed through as given: an int or a float runtime scalar."""
    n = x.shape[0]
    t = megagen.tile_arange(megagen.cdiv(n, BLOCK))
    r = ((t * BLOCK, BLOCK),)
    return megagen.TilePlan(t.size, reads={"x": r}, writes={"out": r}, scalars={"n": n, "b": b},
                            constexprs={"BLOCK": BLOCK})


add_const = megagen.register_task("t_add_const", add_const_tile, inputs=("x",), outputs=("out",),
                                  plan=add_const_plan)


@triton.jit
def fold_add_tile(x, out, n, tile, BLOCK: tl.constexpr):
    offs = tile * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(out + tl.arange(0, BLOCK), tl.load(x + offs, mask=offs < n, other=0.0), sem="relaxed")


def fold_add_plan(x, out, BLOCK=16, reads_out=False):
    """out[0:BLOCK] += every BLOCK-long block of x, one tile a block, with atomics (TilePlan.accumulate).
    ``reads_out``: a tile also claims to read out, which another tile accumulates into (a race)."""
    t = megagen.tile_arange(megagen.cdiv(x.shape[0], BLOCK))
    reads = {"x": ((t * BLOCK, BLOCK),)}
    if reads_out:
        reads = {**reads, "out": ((0, BLOCK),)}
    return megagen.TilePlan(t.size, reads=reads, writes={"out": ((0, BLOCK),)}, scalars={"n": x.shape[0]},
                            constexprs={"BLOCK": BLOCK}, accumulate=("out",))


fold_add = megagen.register_task("t_fold_add", fold_add_tile, inputs=("x",), outputs=("out",), plan=fold_add_plan)


@triton.jit
def group_sum_tile(x, part, out, n, tile, ticket, BLOCK: tl.constexpr, GROUP: tl.constexpr, G_PAD: tl.constexpr,
                   TILES: tl.constexpr):
    """part[t] = the sum of x's block t; the last tile of each group of GROUP to finish (the last group may be
    shorter) writes the group's parts, summed, into out[group]."""
    offs = tile * BLOCK + tl.arange(0, BLOCK)
    tl.store(part + tile, tl.sum(tl.load(x + offs, mask=offs < n, other=0.0), axis=0))
    group = tile // GROUP
    size = tl.minimum(GROUP, TILES - group * GROUP)
    if megagen.take_ticket(ticket, group, size):
        members = tl.arange(0, G_PAD)
        tl.store(out + group, tl.sum(tl.load(part + group * GROUP + members, mask=members < size, other=0.0), axis=0))


def group_sum_reference(x, part, out, tile, BLOCK, GROUP, TILES):
    part[tile] = x[tile * BLOCK:(tile + 1) * BLOCK].sum()
    if tile % GROUP == GROUP - 1 or tile == TILES - 1:  # the group's last tile in order
        out[tile // GROUP] = part[tile // GROUP * GROUP:tile + 1].sum()


def group_sum_plan(x, part, out, BLOCK=8, GROUP=3, overlap=False):
    """Ticket groups of GROUP tiles (TilePlan.tickets); ``overlap``: a tile's box of part also covers the next
    group's first tile (a race the ticket does not order)."""
    tiles = megagen.cdiv(x.shape[0], BLOCK)
    t = megagen.tile_arange(tiles)
    group = t // GROUP
    members = ((group * GROUP, GROUP + int(overlap)),)
    return megagen.TilePlan(tiles, reads={"x": ((t * BLOCK, BLOCK),), "part": members},
                            writes={"part": ((t, 1),), "out": ((group, 1),)}, scalars={"n": x.shape[0]},
                            constexprs={"BLOCK": BLOCK, "GROUP": GROUP, "G_PAD": triton.next_power_of_2(GROUP),
                                        "TILES": tiles}, tickets=group)


group_sum = megagen.register_task("t_group_sum", group_sum_tile, inputs=("x",), outputs=("part", "out"),
                                  plan=group_sum_plan, reference=group_sum_reference)


# ---------------------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Case:
    graph: megagen.TaskGraph
    restore: list  # [(tensor, original values)]: graph inputs, reset before every run
    scratch: list  # tensors the graph writes that are not inputs: NaN-poisoned before every run
    expected: dict  # name -> (tensor, reference)
    tol: dict = dataclasses.field(default_factory=dict)

    def prepare(self):
        for t, v in self.restore:
            t.copy_(v)
        poison(*self.scratch)

    def verify(self):
        for name, (out, ref) in self.expected.items():
            assert_matches(out, ref, what=name, **self.tol)

    def run(self, runner):
        self.prepare()
        runner.run()
        self.verify()


def _inputs(graph, *tensors):
    graph.input(*tensors)
    return [(t, t.clone()) for t in tensors]


def f64(t):
    return t.double()


def elementwise_chain(device):
    """(a) add -> mul -> scale, each op tiled differently (n is no multiple of any BLOCK)."""
    n = 200
    x, y = rand(n, device=device), rand(n, device=device)
    a, b, c = (torch.empty(n, device=device) for _ in range(3))
    g = megagen.TaskGraph("elementwise_chain")
    restore = _inputs(g, x, y)
    g.add(add, x=x, y=y, out=a, BLOCK=64)
    g.add(mul, x=a, y=x, out=b, BLOCK=32)
    g.add(scale, x=b, out=c, alpha=-1.5, BLOCK=128)
    ra = f64(x) + f64(y)
    return Case(g, restore, [a, b, c], {"a": (a, ra), "b": (b, ra * f64(x)), "c": (c, ra * f64(x) * -1.5)})


def gemv_chain(device):
    """(b) four GEMVs, several output tiles each (BLOCK_N < N, tails) and K split in BLOCK_K chunks."""
    dims = [40, 56, 24, 48, 40]
    block_n = [16, 8, 16, 32]
    block_k = [16, 32, 16, 16]
    ws = [weights(dims[i + 1], dims[i], device=device) for i in range(4)]
    xs = [rand(dims[0], device=device)] + [torch.empty(d, device=device) for d in dims[1:]]
    g = megagen.TaskGraph("gemv_chain")
    restore = _inputs(g, xs[0], *ws)
    expected, ref = {}, f64(xs[0])
    for i in range(4):
        g.add(gemv, w=ws[i], x=xs[i], y=xs[i + 1], BLOCK_N=block_n[i], BLOCK_K=block_k[i])
        ref = f64(ws[i]) @ ref
        expected[f"y{i + 1}"] = (xs[i + 1], ref)
    return Case(g, restore, xs[1:], expected, GEMV_TOL)


def diamond(device):
    """(c) fan-out / fan-in: a = W0 x; b = 2a; c = W1 a; d = b + c."""
    n = 32
    x = rand(n, device=device)
    w0, w1 = weights(n, n, device=device), weights(n, n, device=device)
    a, b, c, d = (torch.empty(n, device=device) for _ in range(4))
    g = megagen.TaskGraph("diamond")
    restore = _inputs(g, x, w0, w1)
    g.add(gemv, w=w0, x=x, y=a, BLOCK_N=8, BLOCK_K=16)
    g.add(scale, x=a, out=b, alpha=2.0, BLOCK=16)
    g.add(gemv, w=w1, x=a, y=c, BLOCK_N=16, BLOCK_K=16)
    g.add(add, x=b, y=c, out=d, BLOCK=8)
    ra = f64(w0) @ f64(x)
    rb, rc = 2.0 * ra, f64(w1) @ ra
    return Case(g, restore, [a, b, c, d], {"a": (a, ra), "b": (b, rb), "c": (c, rc), "d": (d, rb + rc)}, GEMV_TOL)


def elementwise_diamond(device):
    """(c) the same shape with elementwise ops only: a -> (b, c) -> d = add(b, c)."""
    n = 100
    x, y = rand(n, device=device), rand(n, device=device)
    a, b, c, d = (torch.empty(n, device=device) for _ in range(4))
    g = megagen.TaskGraph("elementwise_diamond")
    restore = _inputs(g, x, y)
    g.add(add, x=x, y=y, out=a, BLOCK=32)
    g.add(mul, x=a, y=y, out=b, BLOCK=16)
    g.add(scale, x=a, out=c, alpha=0.25, BLOCK=64)
    g.add(add, x=b, y=c, out=d, BLOCK=8)
    ra = f64(x) + f64(y)
    return Case(g, restore, [a, b, c, d], {"d": (d, ra * f64(y) + ra * 0.25), "b": (b, ra * f64(y))})


def ping_pong(device):
    """(d) two buffers reused along a GEMV chain: x -> A -> B -> A -> B (WAR and WAW on every reuse)."""
    n = 32
    x = rand(n, device=device)
    ws = [weights(n, n, device=device) for _ in range(4)]
    A, B = torch.empty(n, device=device), torch.empty(n, device=device)
    g = megagen.TaskGraph("ping_pong")
    restore = _inputs(g, x, *ws)
    src, refs = x, []
    ref = f64(x)
    for i, dst in enumerate([A, B, A, B]):
        g.add(gemv, w=ws[i], x=src, y=dst, BLOCK_N=8, BLOCK_K=16)
        ref = f64(ws[i]) @ ref
        refs.append(ref)
        src = dst
    return Case(g, restore, [A, B], {"A": (A, refs[2]), "B": (B, refs[3])}, GEMV_TOL)


def overwrite(device):
    """(d) ops that overwrite a buffer an earlier op still reads, including graph inputs and in-place ops."""
    n = 48
    a, b, x = rand(n, device=device), rand(n, device=device), rand(n, device=device)
    w, w2 = weights(n, n, device=device), weights(n, n, device=device)
    c, d, y, z = (torch.empty(n, device=device) for _ in range(4))
    g = megagen.TaskGraph("overwrite")
    restore = _inputs(g, a, b, x, w, w2)
    g.add(add, x=a, y=b, out=c, BLOCK=16)  # reads a
    g.add(mul, x=b, y=b, out=a, BLOCK=32)  # overwrites a (WAR on add)
    g.add(add, x=a, y=c, out=d, BLOCK=8)  # reads the new a
    g.add(gemv, w=w, x=x, y=y, BLOCK_N=8, BLOCK_K=16)  # every tile reads all of x
    g.add(scale, x=y, out=x, alpha=0.5, BLOCK=16)  # overwrites x: waits for every gemv tile
    g.add(gemv, w=w2, x=x, y=z, BLOCK_N=16, BLOCK_K=32)  # reads the new x
    g.add(scale, x=x, out=x, alpha=-1.5, BLOCK=32)  # in place on x, after the gemv above read it
    a0, b0, x0 = (f64(v) for _, v in restore[:3])
    rc = a0 + b0
    ra = b0 * b0
    ry = f64(w) @ x0
    rx = 0.5 * ry
    rz = f64(w2) @ rx
    return Case(g, restore, [c, d, y, z],
                {"c": (c, rc), "a": (a, ra), "d": (d, ra + rc), "y": (y, ry), "z": (z, rz), "x": (x, -1.5 * rx)},
                GEMV_TOL)


def user_reverse(device):
    """(e) a user task whose tiles read mirrored blocks: add -> t_rev_copy -> mul with three tilings."""
    n = 50
    x, y = rand(n, device=device), rand(n, device=device)
    s, r, p = (torch.empty(n, device=device) for _ in range(3))
    g = megagen.TaskGraph("user_reverse")
    restore = _inputs(g, x, y)
    g.add(add, x=x, y=y, out=s, BLOCK=16)
    g.add(rev_copy, x=s, out=r, BLOCK=8)
    g.add(mul, x=r, y=x, out=p, BLOCK=32)
    rr = torch.flip(f64(x) + f64(y), [0])
    return Case(g, restore, [s, r, p], {"r": (r, rr), "p": (p, rr * f64(x))})


def user_2d(device):
    """(e) 2-D user tasks: column tiles, then row tiles with ALL columns and a prefetched weight vector;
    the last result is read through a flat view as well (a second view of the same storage)."""
    m, n = 20, 12
    x, v = rand(m, n, device=device), rand(n, device=device)
    yb, zb, wb = (torch.empty(m, n, device=device) for _ in range(3))
    f = torch.empty(m * n, device=device)
    g = megagen.TaskGraph("user_2d")
    restore = _inputs(g, x, v)
    g.add(colscale, x=x, out=yb, alpha=-1.5, BLOCK_N=4)
    g.add(rowmul, x=yb, v=v, out=zb, BLOCK_M=8)  # each row tile needs every column tile
    g.add(rowmul, x=zb, v=v, out=wb, BLOCK_M=4)
    g.add(add, x=wb.view(-1), y=x.view(-1), out=f, BLOCK=64)
    ry = -1.5 * f64(x)
    rz = ry * f64(v)
    rw = rz * f64(v)
    return Case(g, restore, [yb, zb, wb, f],
                {"y": (yb, ry), "z": (zb, rz), "w": (wb, rw), "f": (f, (rw + f64(x)).reshape(-1))})


def slices(device):
    """(f) two ops write the halves of one buffer through slices (one misaligned), later ops read all of it
    through the whole tensor and through a 2-D view."""
    n = 37
    x, y = rand(n, device=device), rand(n, device=device)
    w, v = weights(24, 2 * n, device=device), rand(n, device=device)
    buf = torch.empty(2 * n, device=device)
    s, gy = torch.empty(2 * n, device=device), torch.empty(24, device=device)
    rows = torch.empty(2, n, device=device)
    g = megagen.TaskGraph("slices")
    restore = _inputs(g, x, y, w, v)
    g.add(add, x=x, y=y, out=buf[:n], BLOCK=16)
    g.add(mul, x=x, y=y, out=buf[n:], BLOCK=8)  # storage offset 37 floats: not 16-byte aligned
    g.add(scale, x=buf, out=s, alpha=0.5, BLOCK=32)
    g.add(gemv, w=w, x=buf, y=gy, BLOCK_N=8, BLOCK_K=32)
    g.add(rowmul, x=buf.view(2, n), v=v, out=rows, BLOCK_M=1)
    rbuf = torch.cat([f64(x) + f64(y), f64(x) * f64(y)])
    return Case(g, restore, [buf, s, gy, rows],
                {"buf": (buf, rbuf), "s": (s, 0.5 * rbuf), "gemv": (gy, f64(w) @ rbuf),
                 "rows": (rows, rbuf.view(2, n) * f64(v))}, GEMV_TOL)


def accumulate(device):
    """(g) a reduction by atomics: an op clears acc, a task's tiles all add into it (in any order), a later op
    reads it; the clearing op reads what it overwrites in place, so the order of all three matters."""
    n, block = 100, 16
    x, y = rand(n, device=device), rand(block, device=device)
    acc, out = torch.empty(block, device=device), torch.empty(block, device=device)
    g = megagen.TaskGraph("accumulate")
    restore = _inputs(g, x, y)
    g.add(scale, x=y, out=acc, alpha=0.0, BLOCK=8)  # zeros, from two tiles
    g.add(fold_add, x=x, out=acc, BLOCK=block)  # 7 tiles add into all of acc
    g.add(scale, x=acc, out=out, alpha=2.0, BLOCK=4)
    folded = torch.nn.functional.pad(f64(x), (0, 112 - n)).view(-1, block).sum(0)
    return Case(g, restore, [acc, out], {"acc": (acc, folded), "out": (out, 2.0 * folded)}, GEMV_TOL)


def tickets(device):
    """(h) ticket groups: every tile writes its part, the last of each group to finish sums the group's parts (13
    tiles in groups of 3 and a last group of 1); a later op reads the sums."""
    n = 100
    x = rand(n, device=device)
    part, out, doubled = torch.empty(13, device=device), torch.empty(5, device=device), torch.empty(5, device=device)
    g = megagen.TaskGraph("tickets")
    restore = _inputs(g, x)
    g.add(group_sum, x=x, part=part, out=out)
    g.add(scale, x=out, out=doubled, alpha=2.0, BLOCK=4)
    parts = torch.nn.functional.pad(f64(x), (0, 104 - n)).view(13, 8).sum(1)
    sums = torch.nn.functional.pad(parts, (0, 2)).view(5, 3).sum(1)
    return Case(g, restore, [part, out, doubled], {"part": (part, parts), "out": (out, sums),
                                                   "doubled": (doubled, 2.0 * sums)}, GEMV_TOL)


CASES = {f.__name__: f for f in (elementwise_chain, gemv_chain, diamond, elementwise_diamond, ping_pong, overwrite,
                                 user_reverse, user_2d, slices, accumulate, tickets)}
HAZARD_CASES = ["ping_pong", "overwrite", "user_reverse", "user_2d", "slices", "accumulate"]


# ---------------------------------------------------------------------------------------------------------
# (a)-(f): every case matches PyTorch under every scheduler
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", [c for c in CASES if c not in HAZARD_CASES])
def test_matches_torch(case, scheduler, device):
    c = CASES[case](device)
    mk = c.graph.compile(scheduler)
    c.run(mk)
    assert mk.launches == 1


@pytest.mark.parametrize("scheduler_name", HAZARD_SCHEDULERS)
@pytest.mark.parametrize("case", HAZARD_CASES)
def test_hazards_match_sequential_semantics(case, scheduler_name, device):
    """Buffer reuse, overwritten inputs, user tasks and views, also under valid schedules far from program order."""
    c = CASES[case](device)
    mk = c.graph.compile(make_scheduler(scheduler_name), num_ctas=3)
    c.run(mk)


def test_prefetching_user_task_is_registered_with_its_prefetch():
    task = megagen.registered_tasks()["t_rowmul"]
    assert task is rowmul and task.prefetch is rowmul_prefetch
    assert task.inputs == ("x", "v") and task.outputs == ("out",)


# ---------------------------------------------------------------------------------------------------------
# (g) repeated runs
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", ["diamond", "elementwise_chain"])
def test_repeated_runs_advance_epochs(case, scheduler, device):
    c = CASES[case](device)
    mk = c.graph.compile(scheduler)
    n = mk.dag.num_tasks
    tiles = torch.as_tensor(np.diff(mk.dag.op_offsets), device=mk.counters.device)
    assert mk.launches == 0 and int(mk.counters.count_nonzero()) == 0
    for k in range(1, 4):
        c.run(mk)
        assert mk.launches == k
        assert torch.all(mk.counters[:n] == k), mk.counters[:n].tolist()
        ops = mk.dag.num_ops
        assert torch.equal(mk.counters[n:n + ops], tiles * k), "op counters count every tile of every launch"

    # run() re-reads the tensors: new input values give new results without recompiling
    x = c.restore[0][0]
    new_x = rand(*x.shape, device=device)
    c.restore[0] = (x, new_x)
    c.prepare()
    mk.run()
    assert mk.launches == 4
    for name, (out, ref) in _reference_with(case, c).items():
        assert_matches(out, ref, what=name, **c.tol)


def test_tickets_pick_the_last_tile_of_every_launch(scheduler, device):
    """Each launch adds a group's size to its ticket counter, so the last tile to finish is found anew in every
    launch (new inputs each time); the counters sit between the op counters and the group counters."""
    c = tickets(device)
    mk = c.graph.compile(scheduler)
    n, ops = mk.dag.num_tasks, mk.dag.num_ops
    assert mk.layout.ticket_bases.tolist() == [n + ops, n + ops + 5, n + ops + 5]
    assert mk.layout.describe_counter(mk.dag, n + ops + 4) == "ticket group 4 of op t_group_sum_0"
    x = c.restore[0][0]
    for k in range(1, 4):
        c.restore[0] = (x, rand(*x.shape, device=device))
        c.prepare()
        mk.run()
        parts = torch.nn.functional.pad(f64(c.restore[0][1]), (0, 4)).view(13, 8).sum(1)
        sums = torch.nn.functional.pad(parts, (0, 2)).view(5, 3).sum(1)
        assert_matches(c.expected["out"][0], sums, what=f"out, launch {k}", **c.tol)
        assert mk.counters[n + ops:n + ops + 5].tolist() == [3 * k] * 4 + [k]


def _reference_with(case, c):
    """Expected outputs of ``case`` computed from the (possibly changed) inputs in ``c.restore``."""
    vals = [f64(v) for _, v in c.restore]
    if case == "diamond":
        x, w0, w1 = vals
        a = w0 @ x
        return {"d": (c.expected["d"][0], 2.0 * a + w1 @ a)}
    x, y = vals
    return {"c": (c.expected["c"][0], (x + y) * x * -1.5)}


def test_run_without_check_then_check(device):
    c = elementwise_chain(device)
    mk = c.graph.compile("work_queue")
    c.prepare()
    mk.run(check=False)
    mk.run(check=False)
    mk.check()
    c.verify()
    assert mk.launches == 2
    assert torch.all(mk.counters[:mk.dag.num_tasks] == 2)


# ---------------------------------------------------------------------------------------------------------
# (h) number of CTAs
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("num_ctas", [1, 3, 7])
@pytest.mark.parametrize("case", ["diamond", "overwrite"])
def test_num_ctas(case, num_ctas, scheduler, device):
    c = CASES[case](device)
    mk = c.graph.compile(scheduler, num_ctas=num_ctas)
    assert mk.num_ctas == num_ctas == mk.schedule.num_ctas
    assert mk.simulation.busy.shape == (num_ctas,)
    c.run(mk)


def test_more_ctas_than_tasks(scheduler, device):
    n = 16
    x = rand(n, device=device)
    out = torch.empty(n, device=device)
    g = megagen.TaskGraph("tiny", inputs=[x])
    g.add(scale, x=x, out=out, alpha=2.0, BLOCK=16)
    mk = g.compile(scheduler, num_ctas=5)
    assert mk.dag.num_tasks == 1
    poison(out)
    mk.run()
    mk.run()
    assert_matches(out, 2.0 * x)
    assert mk.launches == 2


@pytest.mark.skipif(not interpreting(), reason="the default CTA count is one per SM on a GPU")
def test_default_num_ctas_under_interpreter(device):
    c = elementwise_chain(device)
    mk = c.graph.compile()
    assert mk.num_ctas == 4 and mk.interleaved
    c.run(mk)


# ---------------------------------------------------------------------------------------------------------
# (i) deadlocks
# ---------------------------------------------------------------------------------------------------------

def test_bad_static_schedule_deadlocks(device):
    c = gemv_chain(device)
    with pytest.raises(megagen.DeadlockError, match="deadlocks") as err:
        c.graph.compile(Backwards(), num_ctas=4)
    msg = str(err.value)
    assert "backwards" in msg and "CTA 0 is stuck at gemv_" in msg and "[tile " in msg

    bad = c.graph.compile(Backwards(), num_ctas=4, validate=False, max_spins=FEW_SPINS)
    assert bad.simulation is None
    c.prepare()
    with pytest.raises(megagen.DeadlockError, match=r"launch 1 stopped") as err:
        bad.run()
    assert "gemv_" in str(err.value) and "[tile " in str(err.value)
    # interleaved, nothing can run; on a GPU, CTAs whose first tasks have no producers finish them first
    finished = re.search(r"(\d+) of 12 tasks finished", str(err.value))
    assert finished and (int(finished.group(1)) == 0 or not bad.interleaved), str(err.value)
    assert int(bad.counters.count_nonzero()) == 0 and bad.launches == 0

    # A bad schedule that runs the first op (4 tiles) before it gets stuck: the counters had moved,
    # and check() must reset them ...
    with pytest.raises(megagen.DeadlockError, match="deadlocks"):
        c.graph.compile(StuckAfterFirstOp(), num_ctas=4)
    partial = c.graph.compile(StuckAfterFirstOp(), num_ctas=4, validate=False, max_spins=FEW_SPINS)
    for attempt in range(2):  # ... so the same kernel fails the same way again, not hanging or with stale epochs
        c.prepare()
        with pytest.raises(megagen.DeadlockError, match=r"launch 1 stopped") as err:
            partial.run()
        # the first op's 4 tiles, and on a GPU possibly tasks that became ready while the launch wound down
        finished = re.search(r"(\d+) of 12 tasks finished", str(err.value))
        assert finished and (int(finished.group(1)) == 4 or (not partial.interleaved and int(finished.group(1)) > 4)), \
            str(err.value)
        assert "The scoreboard was reset" in str(err.value)
        assert int(partial.counters.count_nonzero()) == 0
        assert partial.launches == 0
        assert_matches(c.expected["y1"][0], c.expected["y1"][1], what="first op's output", **GEMV_TOL)

    # a valid kernel of the same graph still runs
    good = c.graph.compile("round_robin", num_ctas=4)
    c.run(good)
    assert good.launches == 1


def test_bad_dynamic_schedule_deadlocks(device):
    c = elementwise_chain(device)
    with pytest.raises(megagen.DeadlockError, match="not a topological order"):
        c.graph.compile(BackwardsQueue(), num_ctas=2)
    bad = c.graph.compile(BackwardsQueue(), num_ctas=2, validate=False, max_spins=FEW_SPINS)
    c.prepare()
    with pytest.raises(megagen.DeadlockError, match="stopped"):
        bad.run()
    assert int(bad.counters.count_nonzero()) == 0 and bad.launches == 0
    good = c.graph.compile("work_queue", num_ctas=2)
    c.run(good)


class _Missing(megagen.Scheduler):
    name = "missing"

    def assign(self, dag, num_ctas):
        order = np.arange(1, dag.num_tasks)  # task 0 never runs
        return megagen.StaticSchedule([order[c::num_ctas] for c in range(num_ctas)], self.name)


class _WrongCtas(megagen.Scheduler):
    name = "wrong_ctas"

    def assign(self, dag, num_ctas):
        return megagen.StaticSchedule([np.arange(dag.num_tasks)], self.name)


def test_schedule_missing_a_task_is_rejected(device):
    c = elementwise_chain(device)
    with pytest.raises(megagen.DeadlockError, match="exactly once"):
        c.graph.compile(_Missing(), num_ctas=2)


def test_schedule_with_wrong_cta_count_is_rejected(device):
    c = elementwise_chain(device)
    with pytest.raises(megagen.MegagenError, match="CTAs"):
        c.graph.compile(_WrongCtas(), num_ctas=3)


# ---------------------------------------------------------------------------------------------------------
# (j) generated source and its cache
# ---------------------------------------------------------------------------------------------------------

def _variety_graph(device):
    n, k = 64, 32
    x, y = rand(n, device=device), rand(n, device=device)
    w, xk = weights(n, k, device=device), rand(k, device=device)
    a, b, c, d, e, gy = (torch.empty(n, device=device) for _ in range(6))
    g = megagen.TaskGraph("variety", inputs=[x, y, w, xk])
    g.add(add, name="first_add", x=x, y=y, out=a, BLOCK=16)
    g.add(add, name="second_add", x=a, y=y, out=b, BLOCK=16)  # same variant as first_add
    g.add(add, name="wide_add", x=b, y=x, out=c, BLOCK=32)  # other BLOCK: its own variant
    g.add(mul, name="the_mul", x=c, y=x, out=d, BLOCK=16)
    g.add(scale, name="the_scale", x=d, out=e, alpha=3.0, BLOCK=16)
    g.add(gemv, name="the_gemv", w=w, x=xk, y=gy, BLOCK_N=16, BLOCK_K=16)
    return g


def test_source_names_ops_and_has_a_branch_per_variant(device, megagen_cache_dir):
    g = _variety_graph(device)
    mk = g.compile("round_robin")
    src = mk.source
    for op in g.ops:
        assert op.name in src
    assert len(mk.build.variants) == 5
    assert src.count("variant == ") == len(mk.build.variants)
    assert "    if variant == 0:" in src
    for v in mk.build.variants:
        assert f"variant == {v.id}:" in src
        assert v.fn_symbol in src
    assert "t_rowmul" not in src
    (gv,) = [v for v in mk.build.variants if v.task is gemv]
    assert gv.prefetch_symbol and f"prefetched = {gv.prefetch_symbol}(" in src
    assert "round_robin" in src
    compile(src, str(mk.source_path), "exec")  # plain, valid Python

    path = mk.source_path
    assert path.exists() and path.read_text() == src
    assert path.parent == megagen_cache_dir
    again = g.compile("round_robin")
    assert again.source == src and again.source_path == path
    other = g.compile("work_queue")
    assert other.source != src and other.source_path != path and other.source_path.exists()
    assert "fetch_task(control, local, base)" in other.source


@pytest.mark.parametrize("first", ["int", "float"])
def test_int_and_float_scalars_of_one_task_get_their_own_variants(first, scheduler, device):
    n = 40
    x = rand(n, device=device)
    outs = [torch.empty(n, device=device) for _ in range(3)]
    values = [3, 0.75, -2] if first == "int" else [0.75, 3, -2.5]
    g = megagen.TaskGraph("scalars", inputs=[x])
    for out, b in zip(outs, values):
        g.add(add_const, x=x, out=out, b=b)
    mk = g.compile(scheduler)
    assert len(mk.build.variants) == 2, "an int and a float runtime scalar are different dispatch branches"
    poison(*outs)
    mk.run()
    for out, b in zip(outs, values):
        assert_matches(out, x.double() + b, what=f"b={b!r}")


def test_same_structure_shares_cached_source(device):
    a, b = elementwise_chain(device), elementwise_chain(device)  # other tensors, same ops and tilings
    mka, mkb = a.graph.compile("zigzag"), b.graph.compile("zigzag")
    assert mka.source == mkb.source and mka.source_path == mkb.source_path
    a.run(mka)
    b.run(mkb)


# ---------------------------------------------------------------------------------------------------------
# (k) the op-by-op baseline
# ---------------------------------------------------------------------------------------------------------

def _pdl_capable() -> bool:
    return not interpreting() and torch.cuda.get_device_capability()[0] >= 9


@pytest.mark.parametrize("pdl", [False, pytest.param(True, marks=pytest.mark.skipif(
    not _pdl_capable(), reason="programmatic dependent launch needs a Hopper GPU"))])
@pytest.mark.parametrize("case", list(CASES))
def test_op_launches_match_megakernel(case, pdl, device):
    c = CASES[case](device)
    ol = megagen.OpLaunches(c.graph, pdl=pdl)
    c.run(ol)  # op by op is correct on its own
    baseline = {name: out.clone() for name, (out, _) in c.expected.items()}
    mk = c.graph.compile("zigzag", num_ctas=3)
    c.run(mk)
    for name, (out, _) in c.expected.items():
        assert_matches(out, baseline[name], what=f"{name} (MegaKernel vs OpLaunches)", rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(_pdl_capable(), reason="checks the refusal where PDL is unavailable")
def test_op_launches_refuse_pdl_without_hopper(device):
    with pytest.raises(megagen.MegagenError, match="pdl=True needs"):
        megagen.OpLaunches(elementwise_chain(device).graph, pdl=True)


# ---------------------------------------------------------------------------------------------------------
# compile options
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("options, match", [
    (dict(num_ctas=0), "num_ctas"),
    (dict(scope="cluster"), "scope"),
    (dict(dep_block=3), "dep_block"),
    (dict(num_wraps=8), "no option 'num_wraps'; did you mean 'num_warps'"),
    (dict(grid=8), "no option 'grid'; its options are dep_block, interleaved"),
])
def test_bad_compile_options(options, match, device):
    c = elementwise_chain(device)
    with pytest.raises(megagen.MegagenError, match=match):
        c.graph.compile("round_robin", **options)


@pytest.mark.skipif(not interpreting(), reason="interpreter only")
def test_interpreter_needs_interleaved(device):
    c = elementwise_chain(device)
    with pytest.raises(megagen.MegagenError, match="interleaved"):
        c.graph.compile("round_robin", interleaved=False)


def test_small_dep_block(device):
    """dep_block=1 polls one dependency at a time; results must not change."""
    c = gemv_chain(device)
    mk = c.graph.compile("round_robin", dep_block=1, num_ctas=2)
    c.run(mk)


def test_megakernel_exposes_networkx_graph_and_schedule(device):
    c = elementwise_chain(device)
    mk = c.graph.compile("zigzag")
    assert isinstance(mk.graph, nx.DiGraph) and set(mk.graph.nodes) == {op.name for op in c.graph.ops}
    assert mk.task_graph is c.graph and mk.schedule.scheduler == "zigzag"


@pytest.mark.gpu
@pytest.mark.skipif(interpreting(), reason="CUDA graphs need a GPU")
def test_run_captured_in_cuda_graph(device):
    """A launch reads its epoch from the device, so replaying a captured launch advances correctly."""
    c = gemv_chain(device)
    mk = c.graph.compile("round_robin")
    c.prepare()
    mk.run()  # warm-up compiles outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        mk.run(check=False)
    for replay in range(1, 4):
        c.prepare()
        graph.replay()
        torch.cuda.synchronize()
        mk.check()
        assert mk.launches == 1 + replay
        assert torch.all(mk.counters[:mk.dag.num_tasks] == 1 + replay)
        c.verify()


@pytest.mark.parametrize("profile", [False, True])
def test_reserved_names_cover_what_the_generated_code_binds(profile, device):
    """A tensor or scalar named like a run_task parameter, local or module global would shadow it."""
    import ast
    from megagen.tasks.base import _RESERVED
    c = gemv_chain(device)
    tree = ast.parse(c.graph.compile("round_robin", profile=profile).source)
    run_task = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "run_task")
    bound = {a.arg for a in run_task.args.args}
    bound |= {t.id for stmt in run_task.body if isinstance(stmt, ast.Assign) for t in stmt.targets}
    bound |= {n.name for n in tree.body if isinstance(n, ast.FunctionDef)} - {"megakernel"}
    bound |= {alias.asname or alias.name for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
              for alias in n.names}
    bound |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets}
    assert bound <= _RESERVED, sorted(bound - _RESERVED)
