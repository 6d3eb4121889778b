"""The timeline profiler: every task of a launch is recorded (under the interpreter on a logical clock, which
makes dependency order exact), and a profile converts to a Chrome trace, a PNG and a summary. A profile-off
kernel has no profiling code, and a recorded buffer converts without a GPU (what CI checks of a GPU run)."""
import json

import numpy as np
import pytest
import torch

import megagen
from megagen.compiler import POINTER_PARAMS
from megagen.profiler import CTA, SM, T_END, T_MARKS, T_START, T_WAIT_DONE, Profile
from megagen.profiler_device import PROFILE_MARKS
from megagen.tasks import add, gemv
from mgutil import assert_matches, rand, weights

N = 64


def _graph(device):
    """gemv (4 tiles) then add (4 tiles), whose tiles wait on the gemv's."""
    w, x, r = weights(N, N, device=device), rand(N, device=device), rand(N, device=device)
    h, y = torch.empty(N, device=device), torch.empty(N, device=device)
    g = megagen.TaskGraph("two_ops", inputs=[w, x, r])
    g.add(gemv, w=w, x=x, y=h, BLOCK_N=16, BLOCK_K=16)
    g.add(add, x=h, y=r, out=y, BLOCK=16)
    return g, (w @ x + r, y)


@pytest.fixture
def profiled(scheduler, device):
    """A profiled MegaKernel after two launches (the profile holds the second), and its profile."""
    g, (expected, y) = _graph(device)
    mk = g.compile(scheduler, profile=True)
    mk.run()
    mk.run()
    assert_matches(y, expected, rtol=1e-4, atol=1e-5)
    return mk, mk.profile()


def test_every_task_recorded_once_in_dependency_order(profiled):
    mk, p = profiled
    assert p.num_tasks == mk.dag.num_tasks  # the Profile checks row t holds task t
    assert (p.start <= p.wait_done).all() and (p.wait_done <= p.end).all()
    rows = p.rows
    for t in range(p.num_tasks):
        for producer in mk.dag.deps(t).tolist():
            if p.clock == "logical":  # exact: the producer's end event came before this task's wait ended
                assert rows[t, T_WAIT_DONE] > rows[producer, T_END], (mk.dag.describe(t), producer)
            else:  # the producer's end time is read after its release, so it may follow the consumer's wait
                assert rows[t, T_WAIT_DONE] >= rows[producer, T_WAIT_DONE], (mk.dag.describe(t), producer)
    assert set(rows[:, CTA].tolist()) <= set(range(mk.num_ctas))
    for cta in np.unique(rows[:, CTA]):  # a CTA runs one task at a time
        mine = np.flatnonzero(rows[:, CTA] == cta)
        mine = mine[np.argsort(rows[mine, T_START])]
        assert (rows[mine[1:], T_START] >= rows[mine[:-1], T_END]).all()
    if not mk.schedule.dynamic:
        for cta, queue in enumerate(mk.schedule.queues):
            assert (rows[queue, CTA] == cta).all()
            assert (np.diff(rows[queue, T_START]) > 0).all(), "a CTA runs its queue in order"


def test_logical_clock_numbers_every_event(profiled):
    _, p = profiled
    if p.clock != "logical":
        pytest.skip("the logical clock is the interpreter's")
    assert (p.rows[:, SM] == p.rows[:, CTA]).all()
    marks = p.rows[:, T_MARKS:]
    stamps = np.sort(np.concatenate([p.rows[:, T_START:T_END + 1].reshape(-1), marks[marks > 0]]))
    assert (np.diff(stamps) == 1).all(), "three events per task and its marks, one tick each"


def test_gemv_tiles_mark_their_progress(profiled):
    """A GEMV tile records three marks in its run, in order (input ready, last products, stores issued); the add's
    tiles record none. On the logical clock the order is exact."""
    mk, p = profiled
    gemv_tasks = p.task_type == "gemv"
    assert gemv_tasks.sum() == 4 and p.marks.shape == (p.num_tasks, PROFILE_MARKS.value)
    times = np.column_stack([p.wait_done, p.marks, p.end])[gemv_tasks]
    steps = np.diff(times, axis=1)
    assert ((steps > 0) if p.clock == "logical" else (steps >= 0)).all(), times  # a GPU clock ticks coarsely
    assert np.isnan(p.marks[~gemv_tasks]).all()


def test_decode_step_tiles_mark_their_progress():
    """In a decode step (tiny Qwen3, interpreter) every GEMV tile and attention tile marks its
    progress, in order within its run; the other tasks (embedding, argmax, pick) mark nothing."""
    from megagen import models
    if not megagen.backend.interpreting():
        pytest.skip("the logical clock orders the marks exactly; CI runs the interpreter")
    model = models.load("tiny-qwen3", dtype=torch.float32, device="cpu")
    runner = megagen.build(model, max_seq_len=24, profile=True, attention_split_keys=8)
    runner.generate(torch.randint(3, model.config.vocab_size, (1, 8)), max_new_tokens=2)
    p = runner.kernel(1).profile()
    marking = np.isin(p.task_type, ["rmsnorm_gemv", "gemv_residual", "silu_mul_gemv_residual",
                                    "qk_norm_attention"])
    assert set(p.task_type[~marking]) == {"embedding", "argmax_partial", "greedy_pick"}
    times = np.column_stack([p.wait_done, p.marks, p.end])[marking]
    assert (np.diff(times, axis=1) > 0).all()
    assert np.isnan(p.marks[~marking]).all()


def test_chrome_trace(profiled, tmp_path):
    _, p = profiled
    path = tmp_path / "trace.json"
    p.to_chrome_trace(path)
    trace = json.loads(path.read_text())
    assert trace["otherData"]["clock"] == p.clock
    events = trace["traceEvents"]
    runs = [e for e in events if e["ph"] == "X" and e["cat"] != "wait"]
    waits = [e for e in events if e["ph"] == "X" and e["cat"] == "wait"]
    assert sorted(e["args"]["task"] for e in runs) == list(range(p.num_tasks))
    assert len(waits) == int((p.wait > 0).sum())
    for e in runs:
        t = e["args"]["task"]
        assert e["name"] == f"{p.op_names[p.task_op[t]]}[{p.task_tile[t]}]" == f"{e['args']['op']}[{e['args']['tile']}]"
        assert e["cat"] == e["args"]["task_type"] == p.task_type[t]
        assert (e["pid"], e["tid"]) == (p.rows[t, SM], p.rows[t, CTA])
        assert e["dur"] >= 0
    assert {e["args"]["task_type"] for e in runs} == {"gemv", "add"}
    named = {e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert named == set(p.rows[:, SM].tolist())


def test_plot_writes_a_png(profiled, tmp_path):
    _, p = profiled
    path = tmp_path / "timeline.png"
    p.plot(path)
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 1000


def test_summary_names_each_task_type(profiled):
    _, p = profiled
    text = p.summary()
    for needle in ("gemv", "add", "launch span", "idle tail", "waiting on dependencies", "biggest losses"):
        assert needle in text, text


def test_profile_off_has_no_profiling_code(device):
    g, _ = _graph(device)
    mk = g.compile("round_robin")
    assert "profile" not in mk.source and "CLOCK" not in mk.source
    assert mk.build.pointer_params == POINTER_PARAMS and "CLOCK" not in mk._constexprs
    with pytest.raises(megagen.MegagenError, match="profile=True"):
        mk.profile()
    on = g.compile("round_robin", profile=True)
    assert on.source_path != mk.source_path and "profile_task(" in on.source


def test_profile_before_any_launch_is_refused(device):
    g, _ = _graph(device)
    mk = g.compile("round_robin", profile=True)
    with pytest.raises(megagen.MegagenError, match="no record"):
        mk.profile()


# A launch recorded by hand, as a GPU would: globaltimer nanoseconds from an arbitrary origin, CTAs 0 and 1
# on SMs 5 and 7. Tasks 0-3 are the gemv's tiles, 4-7 the add's; the add's first two tiles wait 500 ns.
BASE = 1_700_000_000_000
RECORDED = [  # task, cta, sm, t_start, t_wait_done, t_end
    (0, 0, 5, 0, 0, 1000),
    (1, 1, 7, 100, 100, 1100),
    (2, 0, 5, 1000, 1000, 2000),
    (3, 1, 7, 1100, 1100, 2100),
    (4, 0, 5, 2000, 2500, 3000),
    (5, 1, 7, 2100, 2600, 3100),
    (6, 0, 5, 3000, 3000, 3500),
    (7, 1, 7, 3100, 3100, 4000),
]


@pytest.fixture
def recorded(device):
    g, _ = _graph(device)
    assert [op.num_tiles for op in g.ops] == [4, 4]
    rows = torch.tensor(RECORDED, dtype=torch.int64)
    rows[:, T_START:] += BASE
    return Profile.from_buffer(rows, g)


def test_recorded_buffer_converts(recorded, tmp_path):
    p = recorded
    assert p.span == 4000 and p.idle_tail() == {0: 500, 1: 0}
    assert p.wait.tolist() == [0, 0, 0, 0, 500, 500, 0, 0]
    assert p.run.tolist() == [1000] * 4 + [500, 500, 500, 900]

    p.to_chrome_trace(tmp_path / "trace.json")
    events = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    x = {(e["name"]): e for e in events if e["ph"] == "X"}
    assert len(x) == 10  # 8 run slices, 2 wait slices
    assert x["wait add_1[0]"] == dict(ph="X", name="wait add_1[0]", cat="wait", ts=2.0, dur=0.5, pid=5, tid=0,
                                      args=dict(task=4, op="add_1", tile=0, task_type="add"))
    assert (x["add_1[1]"]["ts"], x["add_1[1]"]["dur"], x["add_1[1]"]["pid"]) == (2.6, 0.5, 7)
    assert (x["gemv_0[3]"]["ts"], x["gemv_0[3]"]["dur"], x["gemv_0[3]"]["cat"]) == (1.1, 1.0, "gemv")
    names = {(e["pid"], e.get("tid"), e["args"]["name"]) for e in events if e["name"].endswith("_name")}
    assert names == {(5, None, "SM 5"), (5, 0, "CTA 0"), (7, None, "SM 7"), (7, 1, "CTA 1")}

    text = p.summary()
    assert "launch span: 4.00 us" in text
    assert "2 CTAs, 2 SMs" in text
    lines = text.splitlines()
    gemv_line = next(line for line in lines if line.startswith("gemv"))
    add_line = next(line for line in lines if line.startswith("add"))
    assert gemv_line.split()[1:] == ["4", "4.00", "us", "1.00", "us", "0.00", "us"]
    assert add_line.split()[1:] == ["4", "2.40", "us", "0.60", "us", "1.00", "us"]
    assert "mean 0.25 us, max 0.50 us (CTA 0)" in text
    losses = lines[lines.index(next(line for line in lines if line.startswith("biggest losses"))) + 1:]
    assert losses == ["  1. running gemv: 4.00 us (50.0%)", "  2. running add: 2.40 us (30.0%)",
                      "  3. waiting on dependencies: 1.00 us (12.5%)", "  4. idle tail: 0.50 us (6.2%)"]

    p.save(tmp_path / "launch.npz")
    again = Profile.load(tmp_path / "launch.npz")
    assert again.summary() == text and (again.rows == p.rows).all() and again.op_names == p.op_names
    assert p.op_steps.tolist() == again.op_steps.tolist() == [4, 0]  # the gemv: 16 rows x 64 in 16 x 16 blocks
    again.plot(tmp_path / "timeline.png")
    assert (tmp_path / "timeline.png").read_bytes().startswith(b"\x89PNG")


def test_a_profile_keeps_each_gemv_tiles_loop_steps(device, tmp_path):
    """``from_buffer`` keeps each op's loop steps a tile (``linear.loop_steps``: row blocks times K blocks; 0 for other
    tasks and for tiles that stage their weights), ``save`` / ``load`` keep them, and a profile saved without them
    (before they existed) loads with none."""
    from megagen.profiler_device import PROFILE_FIELDS
    from megagen.tasks import linear
    w, x, r = rand(64, 128, device=device), rand(1, 1, 128, device=device), rand(64, device=device)
    y, out = torch.empty(1, 1, 64, device=device), torch.empty(64, device=device)
    g = megagen.TaskGraph("gemv_add", inputs=[w, x, r])
    op = g.add(linear.gemv, w=w, x=x, y=y, BLOCK_N=16, BLOCK_K=32, TILE_ROWS=32, stage=False)
    g.add(add, x=y.view(64), y=r, out=out, BLOCK=16)
    cx = op.plan.constexprs
    assert (cx["TILE_ROWS"], cx["BLOCK_N"], cx["BLOCK_K"], cx["CHUNK"]) == (32, 16, 32, 128)
    assert linear.loop_steps(cx) == 2 * 4 and linear.loop_steps({**cx, "STAGE_BYTES": 4096}) == 0
    n = sum(o.num_tiles for o in g.ops)
    rows = np.zeros((n, PROFILE_FIELDS.value), np.int64)
    rows[:, 0] = np.arange(n)
    p = Profile.from_buffer(rows, g)
    assert p.op_steps.tolist() == [8, 0]
    p.save(tmp_path / "steps.npz")
    assert Profile.load(tmp_path / "steps.npz").op_steps.tolist() == [8, 0]
    old = Profile(p.graph_name, p.op_names, p.task_types, p.op_offsets, p.rows, p.clock)
    old.save(tmp_path / "old.npz")
    assert Profile.load(tmp_path / "old.npz").op_steps is None
    with pytest.raises(megagen.MegagenError, match="one count per op"):
        Profile(p.graph_name, p.op_names, p.task_types, p.op_offsets, p.rows, p.clock, [8])


def test_recorded_buffer_missing_a_task_is_refused(device):
    g, _ = _graph(device)
    rows = np.array(RECORDED, dtype=np.int64)
    rows[6] = 0  # task 6 never wrote its row
    with pytest.raises(megagen.MegagenError, match=r"1 of 8 tasks \(first: add_1\[tile 2\]\)"):
        Profile.from_buffer(rows, g)
    with pytest.raises(megagen.MegagenError, match="shape"):
        Profile.from_buffer(rows[:7], g)


# ---------------------------------------------------------------------------------------------------------
# the per-layer waterfall (benchmarks/waterfall.py)
# ---------------------------------------------------------------------------------------------------------

def _waterfall_module():
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import waterfall
    return waterfall


def test_waterfall_splits_each_phase_into_parts_that_add_up():
    from megagen import models
    wf = _waterfall_module()
    config = models.preset_config("tiny-llama")
    rows = np.array([  # task, cta, sm, start, wait done, end (ns)
        (0, 0, 0, 0, 100, 1100),       # L0.q_proj tile 0
        (1, 1, 1, 0, 100, 1000),       # L0.q_proj tile 1
        (2, 1, 1, 1000, 1000, 1500),   # L0.k_proj: same phase as q
        (3, 0, 0, 1100, 1600, 2000),   # L0.attention
        (4, 1, 1, 1500, 2100, 3000),   # lm_head
    ])
    p = Profile("g", ["L0.q_proj", "L0.k_proj", "L0.attention", "lm_head"], ["rmsnorm_gemv"] * 2 +
                ["attention_partial", "rmsnorm_gemv"], [0, 2, 3, 4, 5], rows, "globaltimer")
    sizes = wf.op_bytes(config, context=8)
    table = wf.waterfall(p, config, context=8, bandwidth=1e9)  # 1 byte per ns
    assert [(r["layer"], r["phase"], r["tiles"]) for r in table] == [
        (0, "q/k/v", 3), (0, "attention", 1), (None, "lm_head", 1)]
    qkv, attention, head = table
    assert qkv["bytes"] == sizes["q_proj"] + sizes["k_proj"] and qkv["floor"] == pytest.approx(qkv["bytes"])
    # critical 1500; mean CTA busy (1000 + 900 + 500) / 2 = 1200; busiest CTA 900 + 500 = 1400
    assert qkv["critical"] == 1500
    assert qkv["slow_streaming"] == pytest.approx(1200 - qkv["floor"])
    assert qkv["uneven_waves"] == pytest.approx(200) and qkv["latency"] == pytest.approx(100)
    assert attention["critical"] == 500 and head["critical"] == 1000
    for r in table:
        parts = r["floor"] + r["slow_streaming"] + r["uneven_waves"] + r["latency"]
        assert parts == pytest.approx(r["critical"])
    assert sum(r["critical"] for r in table) == p.span
    # one rank's profile at tp=2 reads half of every op's bytes, as megagen.bench_tp's floor counts them
    half = wf.waterfall(p, config, context=8, bandwidth=1e9, tp=2)
    assert [r["bytes"] for r in half] == [r["bytes"] // 2 for r in table]
    assert [r["critical"] for r in half] == [r["critical"] for r in table]
    with pytest.raises(megagen.MegagenError, match="tp must be a positive int"):
        wf.waterfall(p, config, context=8, bandwidth=1e9, tp=0)
    # boundaries: q/k/v after the launch's start (k_proj reached 1000 ns late), attention after q/k/v's end (1500)
    assert (qkv["lead"], qkv["arrived_late"], qkv["wake"], qkv["last_wake"], qkv["tile_run"]) == (0, 1, 100, 1000, 900)
    assert (attention["lead"], attention["arrived_late"], attention["wake"], attention["tile_run"]) == (400, 0, 100, 400)
    md = wf.markdown(table, "synthetic")
    assert "| q/k/v (median of 1 layers) | 3 |" in md and "| lm_head | 1 |" in md
    assert "| attention (median of 1 layers) | 1 | 0.40 | 0 | 0.10 / 0.10 | 0.40 |" in md
    # tiles by what their CTA ran before: k_proj after CTA 1's q_proj tile, the attention after CTA 0's, the lm_head
    # after k_proj; the last tenth of a phase of three tiles is its last tile (k_proj, ending at 1500 ns)
    assert wf.previous_on_cta(p).tolist() == [-1, -1, 1, 0, 2]
    assert qkv["before"] == {"its CTA's first": dict(tiles=2, lead=0.0, done=1050.0, last=0),
                             "q/k/v": dict(tiles=1, lead=-1000.0, done=1500.0, last=1)}
    assert attention["before"] == {"q/k/v": dict(tiles=1, lead=400.0, done=500.0, last=1)}
    assert "| attention (median of 1 layers) | q/k/v | 1.0 | 0.40 | 0.50 | 100% |" in md


def test_a_phase_off_the_critical_path_takes_none_of_the_span():
    """A phase that ends before the phase before it (an op placed after another but waiting on less) has no
    critical time, and the step's span stays the sum of the phases' critical times."""
    from megagen import models
    wf = _waterfall_module()
    rows = np.array([  # task, cta, sm, start, wait done, end (ns)
        (0, 0, 0, 0, 100, 1000),      # L0.attention
        (1, 1, 1, 0, 1100, 2000),     # L0.o_proj
        (2, 0, 0, 1000, 1100, 1500),  # L0.cache_append: waits on the attention only, ends before o
        (3, 0, 0, 1500, 2100, 2600),  # L0.gate_proj
    ])
    p = Profile("g", ["L0.attention", "L0.o_proj", "L0.cache_append", "L0.gate_proj"],
                ["attention_partial", "gemv_residual", "attention_append", "rmsnorm_gemv"], [0, 1, 2, 3, 4], rows,
                "globaltimer")
    table = wf.waterfall(p, models.preset_config("tiny-llama"), context=8, bandwidth=1e9)
    assert [r["critical"] for r in table] == [1000, 1000, 0, 600]
    assert sum(r["critical"] for r in table) == p.span
    for r in table:
        assert r["floor"] + r["slow_streaming"] + r["uneven_waves"] + r["latency"] == pytest.approx(r["critical"])


def test_waterfall_gives_a_tensor_parallel_allreduce_a_phase_of_its_own():
    """At tp > 1 a projection's allreduce waits for the projection's tiles on every rank: its own phase, so the
    projection's critical time ends at its last tile and the allreduce's is the communication after it."""
    wf = _waterfall_module()
    names = ["L0.o_proj", "L0.o_proj.allreduce", "L0.gate_proj", "L0.down_proj", "L0.down_proj.allreduce"]
    rows = np.array([(k, 0, 0, 1000 * k, 1000 * k, 1000 * k + 900) for k in range(len(names))])
    p = Profile("g", names, ["gemv", "allreduce", "rmsnorm_gemv", "silu_mul_gemv", "allreduce"],
                list(range(len(names) + 1)), rows, "globaltimer")
    assert [phase for _, phase, _ in wf.phases_of(p)] == ["o", "o allreduce", "gate/up", "down", "down allreduce"]


def test_waterfall_splits_a_marked_tile_run():
    """Tiles that recorded marks get their run split at them (medians of the phase's marked tiles); a phase of
    tiles without marks gets no row, and a profile without marks no table."""
    from megagen import models
    wf = _waterfall_module()
    config = models.preset_config("tiny-llama")
    rows = np.array([  # task, cta, sm, start, wait done, end, three marks (0: none), ns
        (0, 0, 0, 0, 100, 1100, 300, 900, 1000),   # L0.q_proj tile 0
        (1, 1, 1, 0, 100, 1000, 200, 700, 800),    # L0.q_proj tile 1
        (2, 0, 0, 1100, 1600, 2000, 0, 0, 0),      # L0.attention, no marks
    ])
    p = Profile("g", ["L0.q_proj", "L0.attention"], ["rmsnorm_gemv", "attention_partial"], [0, 2, 3], rows,
                "globaltimer", op_steps=[4, 0])
    qkv, attention = wf.waterfall(p, config, context=8, bandwidth=1e9)
    assert qkv["marks"].tolist() == [150, 550, 100, 150] and attention["marks"] is None
    # 4 loop steps a q tile: 600 and 500 ns from the input ready to the last products, 150 and 125 ns a step
    assert (qkv["loop_steps"], qkv["step_time"]) == (4, 137.5) and attention["step_time"] is None
    # the two tiles stream at once (two CTAs): the phase's bytes (1 byte a ns) over 550 ns
    assert qkv["streaming"] == pytest.approx(qkv["bytes"] / 550) and attention["streaming"] is None
    md = wf.markdown([qkv, attention], "synthetic")
    share = f"{100 * qkv['bytes'] / 550:.0f}%"
    assert f"| q/k/v (median of 1 layers) | 0.15 | 0.55 | 0.10 | 0.15 | {share} | 4, 0.14 |" in md
    assert "| attention (median" in md
    assert md.count("| attention (median") == 3  # the three tables before, not the marks'
    assert "Inside the tiles" not in wf.markdown(wf.waterfall(Profile("g", ["L0.q_proj"], ["rmsnorm_gemv"], [0, 2],
                                                                      rows[:2, :6], "globaltimer"),
                                                              config, context=8, bandwidth=1e9), "no marks")


@pytest.mark.parametrize("name", ["tiny-qwen3-moe", "tiny-mixtral"])
def test_waterfall_counts_the_routed_experts_of_a_sparse_layer(name):
    """A sparse layer's phases read its router (or early routing's two parts of it) and its routed experts' weights
    (from the model's own stacked expert tensors): top k at batch 1, at batch 3 the expected union of the rows' under
    uniform routing, as megagen bench's floor. Early routing's ops count in the phases they run beside."""
    from megagen import models
    from megagen.trace import trace
    wf = _waterfall_module()
    model = models.random_model(name, dtype=torch.float32)
    layer = next(layer for layer in trace(model).layers if layer.experts is not None)
    experts = layer.experts
    sizes = wf.op_bytes(model.config, context=8, batch=3, itemsize=4)
    one = experts.gate_up[0].nbytes // 2  # an expert's gate rows (its up rows are as many)
    assert sizes["router"] == experts.router.nbytes
    assert (sizes["router_x"], sizes["router_a"]) == tuple(w.nbytes for w in layer.early_router)
    num = experts.router.shape[0]
    union = num * (1 - (1 - experts.top_k / num) ** 3)
    assert experts.top_k < union < 3 * experts.top_k
    assert sizes["experts_gate"] == sizes["experts_up"] == round(union * one)
    assert sizes["experts_down"] == round(union * experts.down[0].nbytes)
    one_row = wf.op_bytes(model.config, context=8, batch=1, itemsize=4)
    assert (one_row["experts_gate"], one_row["experts_down"]) == (experts.top_k * one,
                                                                   experts.top_k * experts.down[0].nbytes)
    assert wf.PHASE_OF["experts_gate"] == wf.PHASE_OF["experts_up"] == wf.PHASE_OF["routing_weights"]
    assert (wf.PHASE_OF["router_x"], wf.PHASE_OF["router_a"]) == (wf.PHASE_OF["q_proj"], wf.PHASE_OF["o_proj"])


def test_phase_bounds_run_each_phase_on_what_the_waterfall_counts(tmp_path):
    """benchmarks/phase_bounds.py: each phase's library call reads the bytes the waterfall counts for it and
    computes the phase (a GEMV, GQA attention of one token); megagen's times come from a waterfall table."""
    from megagen import models
    wf = _waterfall_module()
    import phase_bounds as pb
    config = models.preset_config("tiny-qwen3")
    tensors = pb.phase_tensors(config, 3, 8, torch.float32, "cpu")
    sizes = wf.op_bytes(config, context=8, batch=3, itemsize=4)
    assert set(tensors) == set(pb.PHASE_OPS)
    for phase, ts in tensors.items():
        assert pb.read_bytes(phase, ts) == sum(sizes[op] for op in pb.PHASE_OPS[phase]), phase
        assert torch.all(ts[-1] != 0)  # random, never zero
    x, w = tensors["gate/up"]
    assert torch.allclose(pb.run_phase("gate/up", [x, w]), x @ w.T, atol=1e-5)
    q, k, v = tensors["attention"]
    group = q.shape[1] // k.shape[1]
    k2, v2 = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    ref = torch.softmax(q @ k2.transpose(-1, -2) / q.shape[-1] ** 0.5, -1) @ v2
    assert torch.allclose(pb.run_phase("attention", [q, k, v]), ref, atol=1e-5)
    md = tmp_path / "waterfall.md"
    md.write_text("| phase | tiles | MB read | critical µs | floor µs |\n|---|---|---|---|---|\n"
                  "| q/k/v (median of 28 layers) | 128 | 8.39 | 6.05 | 2.00 |\n| lm_head | 264 | 311.16 | 84.58 | 74.26 |\n"
                  "\n| phase | tiles | reached before that end, median µs |\n|---|---|---|\n| q/k/v (median of 28 layers) "
                  "| 128 | 5.50 |\n")
    assert pb.waterfall_critical(md) == {"q/k/v": 6.05, "lm_head": 84.58}
    if not torch.cuda.is_available():
        table = pb.bounds("tiny-qwen3", 1, 8, md)
        assert "no GPU" in table and all(f"| {p} |" in table for p in pb.PHASE_OPS)
