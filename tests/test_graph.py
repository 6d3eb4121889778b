"""Dependency derivation (TileDAG), op-level hazard graph, and the errors a malformed task or graph raises.

Nothing here launches a kernel: ``graph.dependencies`` is pure host-side numpy.
"""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from hypothesis import given, strategies as st

import megagen
from megagen import ALL, GraphError, MegagenError, TaskDefinitionError, TilePlan, cdiv, tile_arange
from megagen.graph import buffer_key, overlapping_pairs
from megagen.scoreboard import encode_dependencies
from megagen.tasks import add, gemv, mul, scale
from mgutil import rand


def deps_of(dag, task):
    return dag.deps(task).tolist()


def empty(n, device, *shape):
    return torch.empty(n, *shape, device=device)


# ---------------------------------------------------------------------------------------------------------
# Test-only task types (registered once per process, under names no other test module uses)
# ---------------------------------------------------------------------------------------------------------

@triton.jit
def copy_tile(x, out, n, tile, BLOCK: tl.constexpr):
    offs = tile * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + offs, mask=offs < n), mask=offs < n)


def flex_plan(x, out, mode="ok", BLOCK=16):
    """A copy plan that, by ``mode``, breaks in one specific way."""
    n = x.shape[0]
    t = tile_arange(cdiv(n, BLOCK))
    r = ((t * BLOCK, BLOCK),)
    num, reads, writes = t.size, {"x": r}, {"out": r}
    scalars, constexprs = {"n": n}, {"BLOCK": BLOCK}
    if mode == "overlapping_writes":
        writes = {"out": ((t * BLOCK, 2 * BLOCK),)}
    elif mode == "bad_dims":
        reads = {"x": (r[0], r[0])}
    elif mode == "not_a_plan":
        return {"num_tiles": num, "reads": reads, "writes": writes}
    elif mode == "zero_tiles":
        num = 0
    elif mode == "no_read":
        reads = {}
    elif mode == "no_write":
        writes = {}
    elif mode == "unknown_tensor":
        reads = {"x": r, "z": r}
    elif mode == "reserved_scalar":
        scalars = {"n": n, "epoch": 1}
    elif mode == "string_scalar":
        scalars = {"n": "sixty-four"}
    elif mode == "bool_scalar":
        scalars = {"n": True}
    elif mode == "missing_scalar":
        scalars = {}
    elif mode == "slice_region":
        reads = {"x": (slice(0, 8),)}
    elif mode == "junk_region":
        reads = {"x": ("start",)}
    elif mode == "wrong_length_region":
        reads = {"x": ((np.arange(num + 1), BLOCK),)}
    elif mode == "shifted_read":  # tile t reads block t + 1: fine between buffers, a race in place
        reads = {"x": (((t + 1) * BLOCK, BLOCK),)}
    return TilePlan(num, reads, writes, scalars=scalars, constexprs=constexprs)


flex = megagen.register_task("g_flex", copy_tile, inputs=("x",), outputs=("out",), plan=flex_plan)


@triton.jit
def gain_tile(x, out, n, gain, tile, BLOCK: tl.constexpr):
    offs = tile * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + offs, mask=offs < n) * gain, mask=offs < n)


def no_gain_plan(x, out, BLOCK=16):
    n = x.shape[0]
    t = tile_arange(cdiv(n, BLOCK))
    return TilePlan(t.size, reads={"x": ((t * BLOCK, BLOCK),)}, writes={"out": ((t * BLOCK, BLOCK),)},
                    scalars={"n": n}, constexprs={"BLOCK": BLOCK})  # no 'gain'


no_gain = megagen.register_task("g_no_gain", gain_tile, inputs=("x",), outputs=("out",), plan=no_gain_plan)


@triton.jit
def rows_tile(x, out, tile, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tile * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    m = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(out + rows[:, None] * N + cols[None, :], tl.load(x + rows[:, None] * N + cols[None, :], mask=m), mask=m)


def rows_plan(x, out, BLOCK_M=2):
    m, n = x.shape
    t = tile_arange(cdiv(m, BLOCK_M))
    rows = ((t * BLOCK_M, BLOCK_M), ALL)
    return TilePlan(t.size, reads={"x": rows}, writes={"out": rows}, scalars={"M": m, "N": n},
                    constexprs={"BLOCK_M": BLOCK_M, "BLOCK_N": triton.next_power_of_2(n)})


def cols_plan(x, out, BLOCK_N=2):
    m, n = x.shape
    t = tile_arange(cdiv(n, BLOCK_N))
    cols = (ALL, (t * BLOCK_N, BLOCK_N))
    return TilePlan(t.size, reads={"x": cols}, writes={"out": cols}, scalars={"M": m, "N": n},
                    constexprs={"BLOCK_M": triton.next_power_of_2(m), "BLOCK_N": BLOCK_N})


# Only the regions matter here (no kernel runs), so the column task reuses the row tile function.
row_copy = megagen.register_task("g_row_copy", rows_tile, inputs=("x",), outputs=("out",), plan=rows_plan)
col_copy = megagen.register_task("g_col_copy", rows_tile, inputs=("x",), outputs=("out",), plan=cols_plan)


def fold_plan(x, out, BLOCK=16, mode="ok"):
    """Every tile adds its block of x into out[0:BLOCK] (TilePlan.accumulate), or, by ``mode``, breaks a rule."""
    t = tile_arange(cdiv(x.shape[0], BLOCK))
    reads = {"x": ((t * BLOCK, BLOCK),)}
    if mode == "reads_out":
        reads["out"] = ((0, BLOCK),)
    return TilePlan(t.size, reads=reads, writes={"out": ((0, BLOCK),)}, scalars={"n": x.shape[0]},
                    constexprs={"BLOCK": BLOCK}, accumulate=("x",) if mode == "accumulates_input" else ("out",),
                    fixed_point={"x": 2.0 ** 32} if mode == "fixed_point_input" else {})


fold = megagen.register_task("g_fold", copy_tile, inputs=("x",), outputs=("out",), plan=fold_plan)


@triton.jit
def ticket_tile(x, out, n, tile, ticket, BLOCK: tl.constexpr):
    if megagen.take_ticket(ticket, tile // 2, 2):
        copy_tile(x, out, n, tile, BLOCK)


def ticket_plan(x, out, BLOCK=16, mode="ok"):
    """Pairs of tiles are ticket groups; each tile declares the pair's box of out (the pair's last tile writes it),
    or, by ``mode``, breaks a rule."""
    t = tile_arange(cdiv(x.shape[0], BLOCK))
    pair = t // 2
    box = ((pair * 2 * BLOCK, (3 if mode == "overlaps_next_group" else 2) * BLOCK),)
    groups = {"ok": pair, "overlaps_next_group": pair, "none": None, "negative": pair - 1, "short": pair[:-1]}[mode]
    return TilePlan(t.size, reads={"x": box}, writes={"out": box}, scalars={"n": x.shape[0]},
                    constexprs={"BLOCK": BLOCK}, tickets=groups)


ticketed = megagen.register_task("g_ticketed", ticket_tile, inputs=("x",), outputs=("out",), plan=ticket_plan)
no_ticket = megagen.register_task("g_no_ticket", copy_tile, inputs=("x",), outputs=("out",), plan=ticket_plan)


# ---------------------------------------------------------------------------------------------------------
# Exact dependencies on small graphs
# ---------------------------------------------------------------------------------------------------------

def test_elementwise_tile_depends_only_on_the_same_tile(device):
    n = 64
    x, y, a, b = rand(n, device=device), rand(n, device=device), empty(n, device), empty(n, device)
    g = megagen.TaskGraph("ew", inputs=[x, y])
    g.add(add, x=x, y=y, out=a, BLOCK=16)
    g.add(mul, x=a, y=x, out=b, BLOCK=16)
    dag = g.dependencies
    assert dag.num_tasks == 8 and dag.num_ops == 2
    assert dag.op_offsets.tolist() == [0, 4, 8]
    assert dag.dep_ptr.tolist() == [0, 0, 0, 0, 0, 1, 2, 3, 4]
    assert dag.dep_idx.tolist() == [0, 1, 2, 3]
    assert dag.task_op.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert dag.task_tile.tolist() == [0, 1, 2, 3, 0, 1, 2, 3]
    assert dag.num_edges == 4
    assert [dag.describe(t) for t in (0, 3, 4, 7)] == ["add_0[tile 0]", "add_0[tile 3]", "mul_1[tile 0]",
                                                        "mul_1[tile 3]"]


@pytest.mark.parametrize("n, producer_block, consumer_block, expected", [
    (64, 32, 16, [[0], [0], [1], [1]]),
    (64, 16, 32, [[0, 1], [2, 3]]),
    (64, 16, 64, [[0, 1, 2, 3]]),
    (50, 16, 32, [[0, 1], [2, 3]]),  # tails: producer tiles end at 16, 32, 48, 50; consumer at 32, 50
    (50, 32, 8, [[0], [0], [0], [0], [1], [1], [1]]),
])
def test_elementwise_tilings_that_differ(n, producer_block, consumer_block, expected, device):
    x, a, b = rand(n, device=device), empty(n, device), empty(n, device)
    g = megagen.TaskGraph("tilings", inputs=[x])
    g.add(scale, x=x, out=a, alpha=2.0, BLOCK=producer_block)
    g.add(scale, x=a, out=b, alpha=2.0, BLOCK=consumer_block)
    dag = g.dependencies
    first = int(dag.op_offsets[1])
    assert [deps_of(dag, first + i) for i in range(dag.num_tasks - first)] == expected


def test_gemv_tile_depends_on_every_producer_tile(device):
    k, n1, n2 = 32, 48, 40
    x = rand(k, device=device)
    w1, w2 = rand(n1, k, device=device), rand(n2, n1, device=device)
    y1, y2, z = empty(n1, device), empty(n2, device), empty(n2, device)
    g = megagen.TaskGraph("gemv", inputs=[x, w1, w2])
    g.add(gemv, w=w1, x=x, y=y1, BLOCK_N=16, BLOCK_K=16)  # tasks 0..2
    g.add(gemv, w=w2, x=y1, y=y2, BLOCK_N=8, BLOCK_K=16)  # tasks 3..7, each reads all of y1
    g.add(scale, x=y2, out=z, alpha=1.0, BLOCK=16)  # tasks 8..10
    dag = g.dependencies
    assert all(deps_of(dag, t) == [] for t in range(3))
    assert all(deps_of(dag, t) == [0, 1, 2] for t in range(3, 8))
    assert [deps_of(dag, t) for t in (8, 9, 10)] == [[3, 4], [5, 6], [7]]
    assert dag.describe(5) == "gemv_1[tile 2]"

    # a dependency on every tile of an op is one wait on that op's counter (n tasks + op index) for its tile count
    entries, ptr = encode_dependencies(dag)[:2]
    n = dag.num_tasks
    for t in range(3, 8):
        assert entries[ptr[t]:ptr[t + 1]].tolist() == [[n + 0, 3]]
    assert entries[ptr[10]:ptr[11]].tolist() == [[7, 1]]
    assert_encoding_matches_dag(dag)


def assert_encoding_matches_dag(dag):
    """Decoding the scoreboard's counter waits gives back exactly each task's producers.

    Counters: tasks first (count 1), then ops (count = the op's tiles), then groups of tiles, if the
    encoding has them (count = the group's size).
    """
    res = encode_dependencies(dag)
    entries, ptr = res[0], res[1]
    n, ops = dag.num_tasks, dag.num_ops
    group_of_task = res[2] if len(res) > 2 else np.full(n, -1)
    for t in range(n):
        producers = set()
        for counter, count in entries[ptr[t]:ptr[t + 1]].tolist():
            if counter < n:
                members = {counter}
            elif counter < n + ops:
                members = set(range(int(dag.op_offsets[counter - n]), int(dag.op_offsets[counter - n + 1])))
            else:
                members = set(np.flatnonzero(group_of_task == counter - n - ops).tolist())
            assert count == len(members), f"{dag.describe(t)} waits on counter {counter} for {count}"
            producers |= members
        assert producers == set(dag.deps(t).tolist()), dag.describe(t)


def test_csr_invariants_and_tile_graph(device):
    k = 32
    x = rand(k, device=device)
    w = rand(k, k, device=device)
    a, b, c = empty(k, device), empty(k, device), empty(k, device)
    g = megagen.TaskGraph("csr", inputs=[x, w])
    g.add(gemv, w=w, x=x, y=a, BLOCK_N=8, BLOCK_K=16)
    g.add(scale, x=a, out=b, alpha=3.0, BLOCK=16)
    g.add(add, x=a, y=b, out=c, BLOCK=8)
    g.add(gemv, w=w, x=c, y=a, BLOCK_N=16, BLOCK_K=16)  # reuses a: RAW, WAR and WAW at once
    dag = g.dependencies
    n = dag.num_tasks
    assert dag.dep_ptr.shape == (n + 1,) and dag.dep_ptr[0] == 0 and dag.dep_ptr[-1] == dag.dep_idx.size
    assert np.all(np.diff(dag.dep_ptr) >= 0)
    assert dag.dep_idx.dtype == np.int64
    for t in range(n):
        d = dag.deps(t)
        assert np.all(np.diff(d) > 0), "sorted and unique"
        assert np.all(d < t), "task numbering is a topological order"

    assert_encoding_matches_dag(dag)

    tg = dag.tile_graph()
    assert isinstance(tg, nx.DiGraph) and nx.is_directed_acyclic_graph(tg)
    assert tg.number_of_nodes() == n and tg.number_of_edges() == dag.num_edges
    assert ("gemv_0", 3) in tg and tg.has_edge(("gemv_0", 1), ("scale_1", 0))
    assert tg.has_edge(("add_2", 3), ("gemv_3", 0))  # RAW: every gemv tile reads all of c
    # gemv_3 also overwrites a, which gemv_0 wrote (WAW) and scale_1 and add_2 read (WAR). Its tiles wait for all
    # of add_2, whose tiles between them read all of a and b, so those waits are implied and dropped: the op
    # graph keeps every hazard, the tile graph what a tile polls
    assert {p for p, _ in tg.in_edges(("gemv_3", 0))} == {("add_2", t) for t in range(4)}
    assert kinds(g, "gemv_0", "gemv_3") == {"WAW"}
    assert kinds(g, "scale_1", "gemv_3") == {"WAR"}
    assert kinds(g, "add_2", "gemv_3") == {"RAW", "WAR"}


def test_graph_dependencies_cached_until_graph_changes(device):
    x, a, b = rand(16, device=device), empty(16, device), empty(16, device)
    g = megagen.TaskGraph("cache", inputs=[x])
    g.add(scale, x=x, out=a, alpha=2.0)
    d1 = g.dependencies
    assert g.dependencies is d1
    g.add(scale, x=a, out=b, alpha=2.0)
    d2 = g.dependencies
    assert d2 is not d1 and d2.num_ops == 2


def test_independent_ops_have_no_edges(device):
    x, y, a, b = rand(32, device=device), rand(32, device=device), empty(32, device), empty(32, device)
    g = megagen.TaskGraph("independent", inputs=[x, y])
    g.add(scale, x=x, out=a, alpha=2.0, BLOCK=8)
    g.add(scale, x=y, out=b, alpha=2.0, BLOCK=8)
    g.add(add, x=x, y=y, out=empty(32, device), BLOCK=8)  # reads what others read: no hazard
    dag = g.dependencies
    assert dag.num_edges == 0 and dag.op_graph.number_of_edges() == 0
    assert set(dag.op_graph.nodes) == {"scale_0", "scale_1", "add_2"}
    assert dag.op_graph.nodes["scale_1"] == {"task": "scale", "tiles": 4, "index": 1}


# ---------------------------------------------------------------------------------------------------------
# Hazard kinds on the op graph
# ---------------------------------------------------------------------------------------------------------

def kinds(g, u, v):
    return g.op_graph.edges[u, v]["kinds"]


def test_raw_chain(device):
    x, a, b = rand(32, device=device), empty(32, device), empty(32, device)
    g = megagen.TaskGraph("raw", inputs=[x])
    g.add(scale, x=x, out=a, alpha=2.0, BLOCK=8)
    g.add(scale, x=a, out=b, alpha=2.0, BLOCK=8)
    assert list(g.op_graph.edges) == [("scale_0", "scale_1")]
    assert kinds(g, "scale_0", "scale_1") == {"RAW"}


def test_war_when_an_input_is_overwritten(device):
    n = 64
    x, y, a = rand(n, device=device), rand(n, device=device), empty(n, device)
    g = megagen.TaskGraph("war", inputs=[x, y])
    g.add(scale, x=x, out=a, alpha=2.0, BLOCK=16)  # reads x
    g.add(scale, x=y, out=x, alpha=3.0, BLOCK=32)  # then overwrites x
    assert kinds(g, "scale_0", "scale_1") == {"WAR"}
    dag = g.dependencies
    assert deps_of(dag, 4) == [0, 1] and deps_of(dag, 5) == [2, 3]


def test_war_on_gemv_input_waits_for_every_reader_tile(device):
    k = 32
    x, w, y = rand(k, device=device), rand(k, k, device=device), empty(k, device)
    g = megagen.TaskGraph("war_gemv", inputs=[x, w])
    g.add(gemv, w=w, x=x, y=y, BLOCK_N=8, BLOCK_K=16)  # 4 tiles, each reads all of x
    g.add(scale, x=y, out=x, alpha=0.5, BLOCK=16)  # overwrites x
    assert kinds(g, "gemv_0", "scale_1") == {"RAW", "WAR"}
    dag = g.dependencies
    assert deps_of(dag, 4) == [0, 1, 2, 3] and deps_of(dag, 5) == [0, 1, 2, 3]


def test_waw_and_a_covering_write_hides_older_writers(device):
    n = 32
    x, y, a, out = rand(n, device=device), rand(n, device=device), empty(n, device), empty(n, device)
    g = megagen.TaskGraph("waw", inputs=[x, y])
    g.add(scale, x=x, out=a, alpha=2.0, BLOCK=16)  # tasks 0, 1
    g.add(scale, x=y, out=a, alpha=3.0, BLOCK=8)  # tasks 2..5: overwrites all of a
    g.add(scale, x=a, out=out, alpha=1.0, BLOCK=32)  # task 6 reads a
    assert kinds(g, "scale_0", "scale_1") == {"WAW"}
    assert kinds(g, "scale_1", "scale_2") == {"RAW"}
    assert not g.op_graph.has_edge("scale_0", "scale_2"), "the covering write of scale_1 orders scale_0 already"
    dag = g.dependencies
    assert [deps_of(dag, t) for t in range(2, 6)] == [[0], [0], [1], [1]]
    assert deps_of(dag, 6) == [2, 3, 4, 5]


def test_partial_overwrite_keeps_older_writer(device):
    n = 32
    x, y, a, out = rand(n, device=device), rand(n // 2, device=device), empty(n, device), empty(n, device)
    g = megagen.TaskGraph("partial", inputs=[x, y])
    g.add(scale, x=x, out=a, alpha=2.0, BLOCK=8)  # tasks 0..3 write all of a
    g.add(scale, x=y, out=a[: n // 2], alpha=3.0, BLOCK=8)  # tasks 4, 5 rewrite the first half only
    g.add(scale, x=a, out=out, alpha=1.0, BLOCK=8)  # tasks 6..9
    assert kinds(g, "scale_0", "scale_1") == {"WAW"}
    assert kinds(g, "scale_0", "scale_2") == {"RAW"}, "the second half still comes from scale_0"
    dag = g.dependencies
    # the halves are two views of a (byte intervals); scale_1 does not cover a, so scale_0 stays a producer
    assert [deps_of(dag, t) for t in range(6, 10)] == [[0, 4], [1, 5], [2], [3]]


def test_kinds_accumulate_on_one_edge(device):
    n = 32
    x, a = rand(n, device=device), empty(n, device)
    g = megagen.TaskGraph("accumulate", inputs=[x])
    g.add(scale, x=x, out=a, alpha=2.0, BLOCK=8)  # reads x, writes a
    g.add(add, x=a, y=a, out=x, BLOCK=8)  # reads a (RAW), overwrites x (WAR)
    g.add(scale, x=x, out=a, alpha=2.0, BLOCK=8)  # reads x (RAW), overwrites a (WAR with add, WAW with scale_0)
    assert kinds(g, "scale_0", "add_1") == {"RAW", "WAR"}
    assert kinds(g, "add_1", "scale_2") == {"RAW", "WAR"}
    assert kinds(g, "scale_0", "scale_2") == {"WAW"}


# ---------------------------------------------------------------------------------------------------------
# Views of one storage
# ---------------------------------------------------------------------------------------------------------

def test_views_and_slices_are_one_buffer(device):
    t = torch.empty(64, device=device)
    assert buffer_key(t) == buffer_key(t[3:]) == buffer_key(t.view(8, 8)) == buffer_key(t[::2])
    assert buffer_key(t) != buffer_key(torch.empty(64, device=device))


def test_halves_written_through_slices_then_read_whole(device):
    n = 24
    x, y, buf, out = rand(n, device=device), rand(n, device=device), empty(2 * n, device), empty(2 * n, device)
    g = megagen.TaskGraph("halves", inputs=[x, y])
    g.add(scale, x=x, out=buf[:n], alpha=2.0, BLOCK=8)  # tasks 0..2: bytes [0, 96)
    g.add(scale, x=y, out=buf[n:], alpha=2.0, BLOCK=16)  # tasks 3, 4: bytes [96, 192)
    g.add(scale, x=buf, out=out, alpha=1.0, BLOCK=16)  # tasks 5..7
    dag = g.dependencies
    # elements: tasks 0..2 write [0,8) [8,16) [16,24); tasks 3, 4 write [24,40) [40,48)
    assert [deps_of(dag, t) for t in (5, 6, 7)] == [[0, 1], [2, 3], [3, 4]]
    assert g.op_graph.has_edge("scale_0", "scale_2") and g.op_graph.has_edge("scale_1", "scale_2")
    assert not g.op_graph.has_edge("scale_0", "scale_1"), "disjoint halves do not conflict"


def test_views_overlapping_in_a_single_element(device):
    """Byte intervals are half-open and exact at the ends: a view starting on a producer tile's last element."""
    n = 24
    x, buf = rand(n, device=device), empty(n + 16, device)
    out1, out2 = empty(16, device), empty(8, device)
    g = megagen.TaskGraph("one_element", inputs=[x])
    g.add(scale, x=x, out=buf[:n], alpha=2.0, BLOCK=8)  # tasks 0..2 write elements [0,8) [8,16) [16,24)
    g.add(scale, x=buf[n - 1:n + 15], out=out1, alpha=1.0, BLOCK=8)  # task 3 reads [23, 31), task 4 [31, 39)
    g.add(scale, x=buf[n:n + 8], out=out2, alpha=1.0, BLOCK=8)  # task 5 reads [24, 32): touches, no overlap
    g.input(buf)  # elements 24.. come from outside the graph
    dag = g.dependencies
    assert deps_of(dag, 3) == [2] and deps_of(dag, 4) == [] and deps_of(dag, 5) == []


def test_slice_of_a_graph_input_is_an_input(device):
    x, out = rand(32, device=device), empty(16, device)
    g = megagen.TaskGraph("slice_input", inputs=[x])
    g.add(scale, x=x[16:], out=out, alpha=2.0)
    assert g.dependencies.num_edges == 0


def test_row_tiles_through_a_flat_view(device):
    """A 2-D row-tiled producer read through a flat 1-D view: byte intervals, still exact for row blocks."""
    x, buf, out = rand(8, 4, device=device), empty(8, device, 4), empty(32, device)
    g = megagen.TaskGraph("rows_flat", inputs=[x])
    g.add(row_copy, x=x, out=buf, BLOCK_M=2)  # 4 tiles of 8 floats each
    g.add(scale, x=buf.view(-1), out=out, alpha=2.0, BLOCK=16)  # 2 tiles of 16 floats
    dag = g.dependencies
    assert [deps_of(dag, 4), deps_of(dag, 5)] == [[0, 1], [2, 3]]


def test_column_tiles_then_row_tiles(device):
    x, a, b = rand(8, 6, device=device), empty(8, device, 6), empty(8, device, 6)
    g = megagen.TaskGraph("cols_rows", inputs=[x])
    g.add(col_copy, x=x, out=a, BLOCK_N=2)  # 3 column tiles
    g.add(row_copy, x=a, out=b, BLOCK_M=4)  # 2 row tiles, each crossing every column tile
    g.add(col_copy, x=b, out=a, BLOCK_N=4)  # 2 column tiles: WAR/WAW on a, RAW on b
    dag = g.dependencies
    assert deps_of(dag, 3) == [0, 1, 2] and deps_of(dag, 4) == [0, 1, 2]
    # RAW on b and WAR on a with both row tiles; the WAW with the column tiles of g_col_copy_0 they overlap is
    # implied (each row tile waited for all of them), so it is not waited for again
    assert deps_of(dag, 5) == [3, 4] and deps_of(dag, 6) == [3, 4]
    assert kinds(g, "g_row_copy_1", "g_col_copy_2") == {"RAW", "WAR"}
    assert kinds(g, "g_col_copy_0", "g_col_copy_2") == {"WAW"}


# ---------------------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------------------

def test_accumulating_tiles_overlap_and_are_ordered_like_writes(device):
    x, y, acc, out = rand(64, device=device), rand(16, device=device), empty(16, device), empty(16, device)
    g = megagen.TaskGraph("fold", inputs=[x, y])
    g.add(scale, x=y, out=acc, alpha=0.0, BLOCK=8)  # tasks 0, 1 clear acc
    g.add(fold, x=x, out=acc, BLOCK=16)  # tasks 2..5 all add into acc
    g.add(scale, x=acc, out=out, alpha=1.0, BLOCK=16)  # task 6 reads the sum
    assert kinds(g, "scale_0", "g_fold_1") == {"WAW"} and kinds(g, "g_fold_1", "scale_2") == {"RAW"}
    dag = g.dependencies
    assert [deps_of(dag, t) for t in range(2, 6)] == [[0, 1]] * 4
    assert deps_of(dag, 6) == [2, 3, 4, 5], "the sum needs every tile that adds into it (the clear is implied)"


@pytest.mark.parametrize("mode, error, match", [
    ("reads_out", GraphError, "tiles of one op run concurrently"),
    ("accumulates_input", TaskDefinitionError, r"accumulates into \['x'\], which are not among its outputs"),
    ("fixed_point_input", TaskDefinitionError, r"gives fixed-point units for \['x'\], which are not among its outputs"),
])
def test_accumulation_rules(mode, error, match, device):
    x, acc = rand(64, device=device), empty(16, device)
    g = megagen.TaskGraph("fold_bad", inputs=[x, acc])
    with pytest.raises(error, match=match):
        g.add(fold, x=x, out=acc, BLOCK=16, mode=mode)
        g.dependencies


def test_ticket_groups_may_overlap_within_a_group_only(device):
    """Tiles of one ticket group may declare overlapping boxes (their last to finish does the group's writes);
    a later reader of the group's box waits for every tile of the group."""
    x, out, y = rand(64, device=device), empty(64, device), empty(64, device)
    g = megagen.TaskGraph("tickets", inputs=[x])
    g.add(ticketed, x=x, out=out, BLOCK=16)  # tasks 0..3, pairs (0, 1) and (2, 3)
    g.add(scale, x=out, out=y, alpha=1.0, BLOCK=16)  # tasks 4..7
    assert [deps_of(g.dependencies, t) for t in range(4, 8)] == [[0, 1], [0, 1], [2, 3], [2, 3]]


@pytest.mark.parametrize("task, mode, error, match", [
    ("ticketed", "overlaps_next_group", GraphError, "tiles of one op run concurrently"),
    ("ticketed", "none", TaskDefinitionError, "takes 'ticket' but its plan gives no tickets"),
    ("no_ticket", "ok", TaskDefinitionError, "gives tickets but its tile function takes no 'ticket'"),
    ("ticketed", "negative", TaskDefinitionError, r"tickets must hold one ticket group \(an int >= 0\) per tile"),
    ("ticketed", "short", TaskDefinitionError, "4 in all; got int64 of shape"),
])
def test_ticket_rules(task, mode, error, match, device):
    x, out = rand(64, device=device), empty(64, device)
    g = megagen.TaskGraph("tickets_bad", inputs=[x])
    with pytest.raises(error, match=match):
        g.add({"ticketed": ticketed, "no_ticket": no_ticket}[task], x=x, out=out, BLOCK=16, mode=mode)
        g.dependencies


def test_waiting_for_a_whole_op_implies_what_its_tiles_waited_for(device):
    """a = 2x (4 tiles); y = W a (every tile reads all of a); d = a + y, tile by tile. A tile of d waits for
    the gemv tiles of its block only: each of them waited for all of a, so d's own need of a block of a is
    dropped (one counter fewer to poll)."""
    n = 32
    x, w = rand(n, device=device), rand(n, n, device=device)
    a, y, d = empty(n, device), empty(n, device), empty(n, device)
    g = megagen.TaskGraph("implied", inputs=[x, w])
    g.add(scale, x=x, out=a, alpha=2.0, BLOCK=8)  # tasks 0..3
    g.add(gemv, w=w, x=a, y=y, BLOCK_N=8, BLOCK_K=16)  # tasks 4..7
    g.add(add, x=a, y=y, out=d, BLOCK=8)  # tasks 8..11
    dag = g.dependencies
    assert [deps_of(dag, t) for t in range(4, 8)] == [[0, 1, 2, 3]] * 4
    assert [deps_of(dag, t) for t in range(8, 12)] == [[4], [5], [6], [7]]
    assert kinds(g, "scale_0", "add_2") == {"RAW"}, "the op graph keeps the hazard; only redundant waits go"


def test_waits_are_implied_through_ops_of_partial_waits(device):
    """a = 2x; y = W a (every tile needs all of a); z = 3y tile by tile; d = a + z tile by tile: a tile of d
    waits for its z tile only (that tile's y tile had seen all of a). e = W z (every tile needs all of z);
    f = y + e tile by tile: a tile of f waits for its e tile only (z's tiles between them had seen all of y).
    The op graph keeps every hazard."""
    n = 32
    x, w = rand(n, device=device), rand(n, n, device=device)
    a, y, z, d, e, f = (empty(n, device) for _ in range(6))
    g = megagen.TaskGraph("implied_through", inputs=[x, w])
    g.add(scale, x=x, out=a, alpha=2.0, BLOCK=8)  # tasks 0..3
    g.add(gemv, w=w, x=a, y=y, BLOCK_N=8, BLOCK_K=16)  # tasks 4..7
    g.add(scale, x=y, out=z, alpha=3.0, BLOCK=8)  # tasks 8..11
    g.add(add, x=a, y=z, out=d, BLOCK=8)  # tasks 12..15
    g.add(gemv, w=w, x=z, y=e, BLOCK_N=8, BLOCK_K=16)  # tasks 16..19
    g.add(add, x=y, y=e, out=f, BLOCK=8)  # tasks 20..23
    dag = g.dependencies
    assert [deps_of(dag, t) for t in range(12, 16)] == [[8], [9], [10], [11]]
    assert [deps_of(dag, t) for t in range(20, 24)] == [[16], [17], [18], [19]]
    assert kinds(g, "scale_0", "add_3") == {"RAW"} and kinds(g, "gemv_1", "add_5") == {"RAW"}
    assert_encoding_matches_dag(dag)  # the scoreboard encodes exactly these waits


def test_error_hierarchy():
    for cls in (GraphError, TaskDefinitionError, megagen.DeadlockError):
        assert issubclass(cls, MegagenError)
    assert issubclass(MegagenError, Exception)


def test_reading_a_tensor_nothing_writes(device):
    stray, out = empty(16, device), empty(16, device)
    g = megagen.TaskGraph("stray")
    g.add(scale, x=stray, out=out, alpha=2.0)
    with pytest.raises(GraphError, match=r"reads 'x', but no op writes it: declare it with graph.input"):
        g.dependencies
    g.input(stray)  # declaring it fixes the graph
    assert g.dependencies.num_tasks == 1


def test_reading_a_tensor_only_a_later_op_writes(device):
    x, a, b = rand(16, device=device), empty(16, device), empty(16, device)
    g = megagen.TaskGraph("order", inputs=[x])
    g.add(scale, x=a, out=b, alpha=2.0)
    g.add(scale, x=x, out=a, alpha=2.0)
    with pytest.raises(GraphError, match="only the later op 'scale_1' writes it"):
        g.dependencies
    with pytest.raises(GraphError):
        g.compile("round_robin")


def test_overlapping_writes_within_one_op(device):
    x, out = rand(64, device=device), empty(64, device)
    g = megagen.TaskGraph("overlap", inputs=[x])
    g.add(flex, x=x, out=out, mode="overlapping_writes")
    with pytest.raises(GraphError, match="tiles of one op run concurrently"):
        g.dependencies


def test_in_place_read_of_another_tiles_block(device):
    x = rand(64, device=device)
    g = megagen.TaskGraph("shift", inputs=[x])
    g.add(flex, x=x, out=x, mode="shifted_read")  # tile t reads block t + 1, which tile t + 1 writes
    with pytest.raises(GraphError, match=r"tile \d+ reads 'x' where tile \d+ writes 'out'"):
        g.dependencies
    y, out = rand(64, device=device), empty(64, device)
    ok = megagen.TaskGraph("shift_ok", inputs=[y])
    ok.add(flex, x=y, out=out, mode="shifted_read")  # the same plan between two buffers is fine
    assert ok.dependencies.num_tasks == 4


def test_gemv_in_place_is_a_race(device):
    v, w = rand(32, device=device), rand(32, 32, device=device)
    g = megagen.TaskGraph("gemv_in_place", inputs=[v, w])
    g.add(gemv, w=w, x=v, y=v, BLOCK_N=8, BLOCK_K=16)
    with pytest.raises(GraphError, match="same buffer"):
        g.dependencies


def test_elementwise_in_place_is_fine(device):
    x = rand(64, device=device)
    g = megagen.TaskGraph("in_place", inputs=[x])
    g.add(add, x=x, y=x, out=x, BLOCK=16)
    assert g.dependencies.num_edges == 0


@pytest.mark.parametrize("mode, error, match", [
    ("bad_dims", TaskDefinitionError, "region of 'x' has 2 dims, tensor has 1"),
    ("not_a_plan", TaskDefinitionError, "plan must return a TilePlan, got dict"),
    ("zero_tiles", TaskDefinitionError, "0 tiles"),
    ("no_read", TaskDefinitionError, "no read region for input 'x'"),
    ("no_write", TaskDefinitionError, "no write region for output 'out'"),
    ("unknown_tensor", TaskDefinitionError, "unknown tensor 'z'"),
    ("reserved_scalar", TaskDefinitionError, "reserved"),
    ("string_scalar", TaskDefinitionError, "scalar 'n' must be int or float"),
    ("bool_scalar", TaskDefinitionError, "scalar 'n' must be int or float"),
    ("missing_scalar", TaskDefinitionError, r"copy_tile takes \['n'\]"),
])
def test_bad_plans_fail_when_the_op_is_added(mode, error, match, device):
    x, out = rand(64, device=device), empty(64, device)
    g = megagen.TaskGraph("bad_plan", inputs=[x])
    with pytest.raises(error, match=match):
        g.add(flex, x=x, out=out, mode=mode)
    assert g.ops == []


@pytest.mark.parametrize("mode, match", [
    ("slice_region", "only ALL"),
    ("junk_region", r"must be \(start, size\)"),
    ("wrong_length_region", r"must be \(start, size\)"),
])
def test_bad_regions_fail_when_dependencies_are_derived(mode, match, device):
    x, out = rand(64, device=device), empty(64, device)
    g = megagen.TaskGraph("bad_region", inputs=[x])
    g.add(flex, x=x, out=out, mode=mode)
    with pytest.raises(TaskDefinitionError, match=match):
        g.dependencies


def test_tile_function_with_unknown_parameter(device):
    x, out = rand(16, device=device), empty(16, device)
    g = megagen.TaskGraph("unknown_param", inputs=[x])
    with pytest.raises(TaskDefinitionError, match=r"gain_tile takes \['gain'\], which are neither tensors"):
        g.add(no_gain, x=x, out=out)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.float8_e4m3fn, torch.uint16])
def test_unsupported_dtype(dtype, device):
    x, out = torch.zeros(16, dtype=dtype, device=device), torch.zeros(16, dtype=dtype, device=device)
    g = megagen.TaskGraph("dtype", inputs=[x])
    with pytest.raises(TaskDefinitionError, match="unsupported dtype"):
        g.add(flex, x=x, out=out)


def test_duplicate_op_name(device):
    x, a, b = rand(16, device=device), empty(16, device), empty(16, device)
    g = megagen.TaskGraph("names", inputs=[x])
    g.add(scale, name="s", x=x, out=a, alpha=2.0)
    with pytest.raises(GraphError, match="'s' already exists"):
        g.add(scale, name="s", x=a, out=b, alpha=2.0)
    assert len(g.ops) == 1


def test_plan_rejecting_arguments_and_missing_tensors(device):
    x, out = rand(16, device=device), empty(16, device)
    g = megagen.TaskGraph("args", inputs=[x])
    with pytest.raises(TaskDefinitionError, match="plan rejected the arguments"):
        g.add(scale, x=x, out=out, alpha=2.0, BLOK=16)
    with pytest.raises(TaskDefinitionError, match=r"needs tensors \['out'\]"):
        g.add(scale, x=x, alpha=2.0)
    with pytest.raises(TaskDefinitionError, match="must be a torch.Tensor"):
        g.add(scale, x=x.tolist(), out=out, alpha=2.0)


@pytest.mark.parametrize("build, match", [
    (lambda d: (add, dict(x=torch.zeros(16, device=d), y=torch.zeros(8, device=d), out=torch.zeros(16, device=d))),
     "1-D tensors of one length"),
    (lambda d: (add, dict(x=torch.zeros(4, 4, device=d), y=torch.zeros(4, 4, device=d),
                          out=torch.zeros(4, 4, device=d))), "1-D tensors"),
    (lambda d: (scale, dict(x=torch.zeros(16, device=d), out=torch.zeros(16, device=d), alpha=1.0, BLOCK=24)),
     "power of two"),
    (lambda d: (gemv, dict(w=torch.zeros(8, 4, device=d), x=torch.zeros(8, device=d), y=torch.zeros(8, device=d))),
     "so x must be"),
    (lambda d: (gemv, dict(w=torch.zeros(4, 8, device=d).t(), x=torch.zeros(4, device=d),
                           y=torch.zeros(8, device=d))), "contiguous"),
])
def test_builtin_plans_validate_shapes(build, match, device):
    task, kwargs = build(device)
    with pytest.raises(TaskDefinitionError, match=match):
        megagen.TaskGraph("builtin").add(task, **kwargs)


def test_graph_level_errors(device):
    g = megagen.TaskGraph("empty")
    with pytest.raises(GraphError, match="no ops"):
        g.dependencies
    with pytest.raises(GraphError, match="no ops"):
        g.compile("round_robin")
    with pytest.raises(GraphError, match="must be tensors"):
        g.input([1.0, 2.0])
    with pytest.raises(TaskDefinitionError, match="registered TaskType"):
        g.add("scale", x=rand(4, device=device), out=empty(4, device))


# ---------------------------------------------------------------------------------------------------------
# register_task
# ---------------------------------------------------------------------------------------------------------

@triton.jit
def takes_prefetched(x, out, n, tile, prefetched, BLOCK: tl.constexpr):
    pass


@triton.jit
def tiny_prefetch(x, tile):
    return tile


def test_register_task_errors():
    def plan(**kw):
        return None

    cases = [
        (dict(name="not an identifier", fn=copy_tile, inputs=("x",), outputs=("out",)), "identifier"),
        (dict(name="g_twice", fn=copy_tile, inputs=("x",), outputs=("x",)), "appears twice"),
        (dict(name="g_no_out", fn=copy_tile, inputs=("x",), outputs=()), "no outputs"),
        (dict(name="g_reserved", fn=copy_tile, inputs=("tile",), outputs=("out",)), "reserved"),
        (dict(name="g_not_jit", fn=lambda x, out: None, inputs=("x",), outputs=("out",)), "not a @triton.jit"),
        (dict(name="g_no_prefetch", fn=takes_prefetched, inputs=("x",), outputs=("out",)), "no prefetch function"),
        (dict(name="g_unused_prefetch", fn=copy_tile, inputs=("x",), outputs=("out",), prefetch=tiny_prefetch),
         "needs a 'prefetched' parameter"),
        (dict(name="scale", fn=copy_tile, inputs=("x",), outputs=("out",)), "already registered"),
    ]
    for kwargs, match in cases:
        with pytest.raises(TaskDefinitionError, match=match):
            megagen.register_task(plan=plan, **kwargs)
    registered = megagen.registered_tasks()
    assert not any(k["name"] in registered for k, _ in cases[:-1])
    assert registered["scale"] is scale, "a failed re-registration keeps the original task"


def test_registering_the_same_task_again_is_idempotent():
    again = megagen.register_task("g_flex", copy_tile, inputs=("x",), outputs=("out",), plan=flex_plan)
    assert megagen.registered_tasks()["g_flex"] is again
    assert set(megagen.registered_tasks()) >= {"add", "mul", "scale", "gemv", "g_flex"}


# ---------------------------------------------------------------------------------------------------------
# overlapping_pairs against brute force
# ---------------------------------------------------------------------------------------------------------

@st.composite
def box_sets(draw, max_boxes=12, max_coord=16):
    dims = draw(st.integers(1, 3))

    def boxes():
        k = draw(st.integers(0, max_boxes))
        starts = np.array([[draw(st.integers(0, max_coord)) for _ in range(dims)] for _ in range(k)],
                          dtype=np.int64).reshape(k, dims)
        sizes = np.array([[draw(st.integers(1, 6)) for _ in range(dims)] for _ in range(k)],
                         dtype=np.int64).reshape(k, dims)
        return starts, starts + sizes

    return boxes() + boxes()


def brute_force_pairs(cs, ce, ps, pe):
    return {(i, j) for i in range(cs.shape[0]) for j in range(ps.shape[0])
            if np.all(np.maximum(cs[i], ps[j]) < np.minimum(ce[i], pe[j]))}


@given(box_sets())
def test_overlapping_pairs_matches_brute_force(boxes):
    cs, ce, ps, pe = boxes
    ci, pi = overlapping_pairs(cs, ce, ps, pe)
    got = list(zip(ci.tolist(), pi.tolist()))
    assert len(got) == len(set(got)), "each pair once"
    assert set(got) == brute_force_pairs(cs, ce, ps, pe)


@given(box_sets(max_boxes=40, max_coord=60))
def test_overlapping_pairs_many_boxes(boxes):
    cs, ce, ps, pe = boxes
    ci, pi = overlapping_pairs(cs, ce, ps, pe)
    assert set(zip(ci.tolist(), pi.tolist())) == brute_force_pairs(cs, ce, ps, pe)


@given(box_sets(max_boxes=40, max_coord=30), st.booleans())
def test_producer_sets_and_single_pairs_together_are_exactly_the_overlaps(boxes, shared):
    """_overlaps may gather a consumer's producers into a set (all producers, or a box's whole overlap);
    sets plus remaining pairs must be exactly the brute-force overlaps, each pair once."""
    from megagen.graph.dependencies import Access, _overlaps
    cs, ce, ps, pe = boxes
    if shared and len(cs):  # consumers sharing boxes: what makes a set worth storing
        cs, ce = np.repeat(cs, 3, axis=0), np.repeat(ce, 3, axis=0)

    def access(s, e):
        return Access(0, "t", False, s, e, False, (), s, e)
    sets, ci, pi = _overlaps(access(cs, ce), access(ps, pe))
    got = list(zip(ci.tolist(), pi.tolist()))
    for consumers, producers in sets:
        got += [(c, p) for c in consumers.tolist() for p in producers.tolist()]
    nonempty = set(np.flatnonzero(np.all(pe > ps, axis=1)).tolist())
    want = brute_force_pairs(cs, ce, ps, pe)
    assert len(got) == len(set(got)), "each pair once"
    assert set(got) == want, (set(got) ^ want, nonempty)


def test_overlapping_pairs_touching_boxes_do_not_overlap():
    s = np.array([[0], [4], [8]])
    ci, pi = overlapping_pairs(s, s + 4, s + 4, s + 8)  # [0,4) [4,8) [8,12) vs [4,8) [8,12) [12,16)
    assert sorted(zip(ci.tolist(), pi.tolist())) == [(1, 0), (2, 1)]


def test_stall_messages_describe_every_kind_of_counter(device):
    """Tile, op and group counters each get a readable description (used when a launch stalls)."""
    from megagen.scoreboard import build_layout
    n = 64
    w1, w2 = rand(n, n, device=device), rand(n, n, device=device)
    x = rand(n, device=device)
    parts, y = torch.empty(2, n, device=device), torch.empty(2, n, device=device)
    g = megagen.TaskGraph("split", inputs=[x, w1, w2])
    g.add(gemv, w=w1, x=x, y=parts, BLOCK_N=16, BLOCK_K=16)  # 4 row tiles x 2 chunks
    g.add(gemv, w=w2, x=parts, y=y, BLOCK_N=16, BLOCK_K=16)  # chunk c reads rows of chunk c only
    dag = g.dependencies
    layout = build_layout(dag, np.zeros(2, np.int64), np.zeros(2, np.int64))
    assert layout.groups, "chunk c of the second gemv depends on a disjoint set of first-gemv tiles"
    nt = dag.num_tasks
    assert layout.describe_counter(dag, 3) == "gemv_0[tile 3]"
    assert layout.describe_counter(dag, nt + 1) == "all tiles of op gemv_1"
    assert layout.describe_counter(dag, nt + dag.num_ops).startswith("a group of 4 tiles from gemv_0[tile ")


# ---- regressions for bugs found while writing the suite ------------------------------------------------

def test_strided_views_are_refused_by_elementwise_tasks(device):
    buf, y, out = rand(20, device=device), rand(10, device=device), torch.empty(10, device=device)
    g = megagen.TaskGraph("strided", inputs=[buf, y])
    with pytest.raises(TaskDefinitionError, match="unit stride"):
        g.add(add, x=buf[::2], y=y, out=out, BLOCK=16)


def test_numpy_scalars_keep_their_kind(device):
    """An np.float32 value is a float scalar, never truncated through an int dispatch variant."""
    x = rand(32, device=device)
    a, b = torch.empty(32, device=device), torch.empty(32, device=device)
    g = megagen.TaskGraph("np_scalars", inputs=[x])
    g.add(scale, x=x, out=a, alpha=np.int64(2), BLOCK=16)
    op = g.add(scale, x=a, out=b, alpha=np.float32(0.5), BLOCK=16)
    assert op.plan.scalars["alpha"] == 0.5 and isinstance(op.plan.scalars["alpha"], float)
    g.compile().run()
    assert torch.allclose(b, x * 2 * 0.5)


def test_column_tiles_with_a_second_view_are_not_flagged_as_overlapping(device):
    """Column tiles overlap as byte ranges, not as boxes; the within-op check uses the op's own view."""
    rows, cols, block = 4, 8, 4

    @triton.jit
    def col_fill_tile(out, tile, ROWS: tl.constexpr, COLS: tl.constexpr, BLOCK: tl.constexpr):
        r = tl.arange(0, ROWS)[:, None]
        c = tile * BLOCK + tl.arange(0, BLOCK)[None, :]
        tl.store(out + r * COLS + c, (r * COLS + c).to(tl.float32))

    def col_fill_plan(out, BLOCK):
        t = tile_arange(out.shape[1] // BLOCK)
        return TilePlan(t.size, reads={}, writes={"out": (ALL, (t * BLOCK, BLOCK))},
                        constexprs={"ROWS": out.shape[0], "COLS": out.shape[1], "BLOCK": BLOCK})

    col_fill = megagen.register_task("col_fill_regression", col_fill_tile, inputs=(), outputs=("out",),
                                     plan=col_fill_plan)
    y = torch.empty(rows, cols, device=device)
    z = torch.empty(rows * cols, device=device)
    g = megagen.TaskGraph("columns_and_flat_view")
    g.add(col_fill, out=y, BLOCK=block)
    g.add(scale, x=y.view(-1), out=z, alpha=2.0, BLOCK=16)
    g.compile().run()
    assert torch.equal(z, 2 * torch.arange(rows * cols, dtype=torch.float32, device=device))


def test_schedule_with_negative_task_id_is_a_deadlock_error():
    x = torch.empty(8)
    g = megagen.TaskGraph("neg", inputs=[x])
    g.add(scale, x=x, out=torch.empty(8), alpha=1.0, BLOCK=8)
    with pytest.raises(megagen.DeadlockError, match="outside"):
        megagen.simulate(megagen.StaticSchedule([np.array([-1])]), g.dependencies)


def test_overlapping_pairs_ignores_empty_boxes():
    ci, pi = overlapping_pairs(np.array([[5]]), np.array([[5]]), np.array([[3]]), np.array([[7]]))
    assert ci.size == 0 and pi.size == 0


def test_prefetch_of_a_tensor_an_earlier_op_writes_is_refused(device):
    """gemv prefetches its weights before waiting; weights an earlier op writes would be read stale on a GPU."""
    w, x = rand(32, 32, device=device), rand(32, device=device)
    w2, y = torch.empty(32, 32, device=device), torch.empty(32, device=device)
    g = megagen.TaskGraph("prefetch_hazard", inputs=[w, x])
    g.add(scale, x=w.view(-1), out=w2.view(-1), alpha=2.0, BLOCK=256)
    g.add(gemv, w=w2, x=x, y=y, BLOCK_N=16, BLOCK_K=16)
    with pytest.raises(GraphError, match="prefetch reads 'w'"):
        g.dependencies
    # the same weights as a graph input nothing writes are fine
    ok = megagen.TaskGraph("prefetch_ok", inputs=[w, x])
    ok.add(gemv, w=w, x=x, y=y, BLOCK_N=16, BLOCK_K=16)
    assert ok.dependencies.num_tasks == 2
