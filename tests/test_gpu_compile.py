"""The GPU code path compiles on any machine: each driver, for sm_90, through Triton's bundled ptxas,
with and without the profiler (which reads %globaltimer and %smid through inline PTX), and the decode
MegaKernel of every model family in bf16 (and one rank of a sampling one), and the op-by-op baseline's
kernels with programmatic dependent launch.

The interpreter never runs the persistent drivers (it runs the interleaved ones), so
without this check a GPU-only compile error would first show on a GPU. The compile
runs in a subprocess because this process has Triton's interpreter switched on.
"""
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = textwrap.dedent('''
    import os
    os.environ["TRITON_INTERPRET"] = "0"
    import torch
    import megagen
    from megagen.compiler import build_kernel, compile_ptx
    from megagen.tasks import add, gemv, scale

    n = 512
    ws = [torch.empty(n, n, dtype=torch.bfloat16) for _ in range(2)]
    x = torch.empty(n, dtype=torch.bfloat16)
    parts = torch.empty(4, n)
    h, y = torch.empty(n), torch.empty(n)
    g = megagen.TaskGraph("ptx_check", inputs=[x, *ws])
    g.add(gemv, w=ws[0], x=x, y=parts, BLOCK_N=32, BLOCK_K=64, COPY_SPREAD=64)  # split-K: group counters
    g.add(gemv, w=ws[1], x=parts, y=h, BLOCK_N=32, BLOCK_K=128)
    g.add(scale, x=h, out=y, alpha=0.5, BLOCK=128)               # float scalar
    g.add(add, x=h, y=y, out=h, BLOCK=128)                        # in place, int scalar
    for scheduler in ("round_robin", "zigzag", "work_queue"):
        build = build_kernel(g, scheduler, num_ctas=8, interleaved=False)
        ptx = compile_ptx(build, num_warps=4)
        assert "atom.global.gpu.acquire" in ptx and "fence.acq_rel.gpu" in ptx, scheduler
        # batch-1 bf16 GEMV tiles stage their weights in shared memory (megagen.tasks.staging)
        assert build.staging and "cp.async.bulk.shared::cluster.global" in ptx and "mbarrier.try_wait" in ptx
        assert "%clock64;" in ptx  # the first GEMV's tiles spread their copies' starts
        print(scheduler, "ok", len(ptx))
    for scheduler in ("round_robin", "work_queue"):  # the static and the dynamic driver, profiled
        build = build_kernel(g, scheduler, num_ctas=8, interleaved=False, profile=True)
        ptx = compile_ptx(build, num_warps=4)
        assert "%globaltimer;" in ptx and "%smid;" in ptx, scheduler
        print(scheduler, "profiled ok", len(ptx))
''')


def _run(script_text: str, tmp_path) -> str:
    """Run a compile script in a fresh interpreter (Triton's JIT, not the interpreter) on this checkout's megagen,
    wherever the package is installed from; returns its stdout."""
    script = tmp_path / "ptx_check.py"
    script.write_text(script_text)
    return _python([str(script)])


def _python(args: list[str], ok: bool = True) -> subprocess.CompletedProcess | str:
    """``python args`` on this checkout's megagen: its stdout, or with ``ok=False`` the finished process."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    r = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=900,
                       env={**os.environ, "PYTHONPATH": path})
    if r.returncode != 0 and "ptxas" in r.stderr and "not found" in r.stderr.lower():
        pytest.skip("this Triton build has no ptxas")
    if not ok:
        return r
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    return r.stdout


def test_gpu_drivers_compile_for_sm90(tmp_path):
    assert _run(SCRIPT, tmp_path).count(" ok ") == 5


DECODE_SCRIPT = textwrap.dedent('''
    import os
    os.environ["TRITON_INTERPRET"] = "0"
    import torch
    import megagen
    from megagen import models
    from megagen.compiler import build_kernel, compile_ptx
    from megagen.decode import DecodeState, Tiling, decode_graph
    from megagen.trace import trace

    # every decode task in bf16: q/k/v bias (qwen2) and q/k norms (qwen3), a sliding window (mistral);
    # tiles sized for 4 CTAs, so the long projections' tiles run several row blocks
    for preset in ("tiny-qwen2", "tiny-qwen3", "tiny-mistral"):
        decoder = trace(models.random_model(preset, dtype=torch.bfloat16))
        state = DecodeState.allocate(decoder, 2, 64)
        graph = decode_graph(decoder, state, 2, Tiling(4))
        assert max(op.plan.constexprs.get("TILE_ROWS", 0) for op in graph.ops) > 16
        ptx = compile_ptx(build_kernel(graph, "round_robin", num_ctas=16, interleaved=False), num_warps=4)
        assert "mma.sync" in ptx or "wgmma" in ptx, preset  # attention on tensor cores
        print(preset, "ok", len(ptx))

    # the op-by-op baseline's kernels, with programmatic dependent launch
    from megagen.codegen import variants_of
    from megagen.compiler import compile_op_ptx
    variants, _ = variants_of(graph)
    gemvs = 0
    for v in variants:
        ptx = compile_op_ptx(v)
        assert "griddepcontrol.wait" in ptx and "griddepcontrol.launch_dependents" in ptx, v.summary
        weight_loads = [line for line in ptx.splitlines() if "ld.global.L1::evict_first" in line]  # GEMV weights
        # aligned weights load 16 bytes a thread, as in the launched kernel (Triton specialises aligned pointers)
        assert all(".v4.b32" in line for line in weight_loads), (v.summary, weight_loads[:2])
        gemvs += bool(weight_loads)
    assert gemvs >= 3
    print("standalone ok", len(variants))

    # one rank of a tensor-parallel decode, as each torchrun process builds it: allreduce forms, peer waits
    from megagen.shard import shard
    from megagen.world import EmulatedWorld
    decoder = trace(models.random_model("tiny-qwen3", dtype=torch.bfloat16))
    for mode, scheduler in (("one_shot", "round_robin"), ("two_shot", "work_queue")):
        world = EmulatedWorld(2, "cpu")
        graphs = [decode_graph(shard(decoder, r, 2), DecodeState.allocate(shard(decoder, r, 2), 1, 64), 1,
                               Tiling(16), world, mode) for r in range(2)]
        build = build_kernel(graphs[:1], scheduler, num_ctas=16, interleaved=False, world_size=2)
        ptx = compile_ptx(build, num_warps=4)
        # peers' counters polled, and tiles other ranks read released, at system scope
        assert "fence.acq_rel.sys" in ptx, mode
        assert any("atom" in line and ".sys" in line and "acquire" in line for line in ptx.splitlines()), mode
        print("tp2", mode, "ok", len(ptx))

    # sampling on one rank of tp=2: candidate lists from every rank, the peers' bf16 logits for large ties
    world = EmulatedWorld(2, "cpu")
    graphs = [decode_graph(shard(decoder, r, 2), DecodeState.allocate(shard(decoder, r, 2), 1, 64), 1, Tiling(16),
                           world, max_top_k=64) for r in range(2)]
    ptx = compile_ptx(build_kernel(graphs[:1], "round_robin", num_ctas=16, interleaved=False, world_size=2))
    print("tp2 sampling ok", len(ptx))
''')


def test_decode_megakernel_compiles_for_sm90(tmp_path):
    assert _run(DECODE_SCRIPT, tmp_path).count(" ok ") == 7


# Spill budgets, bytes of spill stores a thread (ptxas, sm_90a), for one layer at real shapes as megagen bench builds
# it for an H100. Every task's code shares the one kernel's registers, so any task can break them.
# Llama-3.2-1B at batch 8 spilled 300 bytes on 2026-11-23; a next-token pick that took all rows at once made it 564,
# and Llama-3.2-1B's batch-8 step 13% slower on an H100 (BENCHMARKS.md). On 2026-11-25: 32 bytes with the RMSNorms
# as ops of their own, 172 with the o and down projections split 8 ways.
# Qwen3-0.6B at batch 1 spilled 136 bytes (2026-11-25; 80 with 32 x 256 GEMV blocks, 2026-11-26) and none since its
# GEMV tiles hold weights as int32 pairs and row sums of 8 products: with 60 bytes its step took 0.982 ms on an H100,
# with none 0.921 (2026-11-26, eleventh session). Its sampling kernel spilled 564 and its layers ran about 2.6 us
# slower than greedy's in a 2026-11-23 profile; 12 bytes since 2026-11-26. The sampling tasks are functions of
# their own (noinline), but they share the kernel's registers through the call: a pick of 147 registers made the
# kernel spill 152 to 180 bytes, and the layers 28% slower in a profile (2026-11-27, nineteenth session).
SPILL_BUDGETS = {("Llama-3.2-1B", 8, None): 400, ("Qwen3-0.6B", 1, None): 32, ("Qwen3-0.6B", 1, 64): 32}


@pytest.mark.parametrize("preset, batch, sample", list(SPILL_BUDGETS),
                         ids=[f"{p}-b{b}{'-sample' if k else ''}" for p, b, k in SPILL_BUDGETS])
def test_decode_megakernel_stays_within_its_spill_budget(preset, batch, sample):
    report = json.loads(_python([str(ROOT / "benchmarks" / "ptxas_report.py"), "--preset", preset, "--batch",
                                 str(batch), "--json"] + (["--sample", str(sample)] if sample else [])))
    assert (report["batch"], report["ctas"], report["sample"]) == (batch, 264, sample)
    assert 0 < report["megakernel"]["registers"] <= 255
    spills, budget = report["megakernel"]["spill_stores"], SPILL_BUDGETS[preset, batch, sample]
    step = "sampling" if sample else "greedy"
    assert spills <= budget, (f"the batch-{batch} {preset} {step} MegaKernel spills {spills} bytes a thread (budget "
                              f"{budget}): a task's registers crowd the others'; see BENCHMARKS.md")


def _loops(sass_lines: list[str]) -> list[tuple[int, int]]:
    """(first, last) line of each loop in nvdisasm output: a label, and a branch back to it."""
    labels = {line.strip()[:-1]: i for i, line in enumerate(sass_lines) if re.fullmatch(r"\s*\.L_x_\d+:", line)}
    return [(labels[m.group(1)], i) for i, line in enumerate(sass_lines)
            if (m := re.search(r"BRA `\((\.L_x_\d+)\)", line)) and labels.get(m.group(1), i) < i]


def test_attention_tile_issues_its_loads_in_one_round_trip():
    """After its wait (``ACQBULK`` in the op's own kernel) a Qwen3 attention split issues every load outside its
    key/value loop before its first barrier: a barrier (a reduction, a layout conversion) waits for the loads
    before it, and each load after it pays a round trip of its own. Five such round trips one after another had
    cost Qwen3-0.6B 1.5-2.7% of a step on an H100 (BENCHMARKS.md, 2026-11-26, ninth session). Its merge (after
    its ticket, an ``ATOMG``, in the last split to finish) loads every split's outputs before its first barrier
    likewise. (By default the o projection merges Qwen3-0.6B's splits: the merging form is built here.)"""
    code = _python([str(ROOT / "benchmarks" / "ptxas_report.py"), "--preset", "Qwen3-0.6B", "--sass", "L0.attention",
                    "--option", "merge_in_o=False"])
    lines = code.splitlines()
    wait = next(i for i, line in enumerate(lines) if "ACQBULK" in line)
    barrier = next(i for i in range(wait, len(lines)) if "BAR.SYNC" in lines[i])
    ticket = next(i for i in range(barrier, len(lines)) if "ATOMG" in lines[i])
    loops = _loops(lines)
    late = [lines[i].strip() for i in range(barrier, ticket)
            if "LDG" in lines[i] and not any(first <= i <= last for first, last in loops)]
    early = sum("LDG" in line for line in lines[wait:barrier])
    assert loops and early >= 5 and not late, (early, late)
    merge = [i for i in range(ticket, len(lines)) if "LDG" in lines[i]]
    merge_barrier = next(i for i in range(merge[0], len(lines)) if "BAR.SYNC" in lines[i])
    assert len(merge) >= 8 and merge[-1] < merge_barrier, "the merge's loads, then its reductions"


def test_ptxas_report_prints_an_ops_machine_code():
    """``--sass OP``: the op's own kernel as nvdisasm prints it (its loads and barriers), ``--sass megakernel`` the
    whole MegaKernel's; an unknown op is named; ``--tiles`` every op's tiles and those queued behind an op they do
    not need; ``--code`` the MegaKernel's instructions by the Python function they came from, adding up to its
    total."""
    report = [str(ROOT / "benchmarks" / "ptxas_report.py"), "--preset", "tiny-qwen3"]
    code = _python(report + ["--sass", "L0.o_proj"])
    assert "LDG.E.EF" in code and "EXIT" in code  # the weight loads (evict-first), the end
    # every global load releases a scoreboard its first use waits for (the control bits, decoded)
    loads = [line for line in code.splitlines() if "LDG" in line]
    assert loads and all(re.search(r"// sets sb[0-5]$", line) for line in loads), loads
    assert re.search(r"// (sets sb[0-5] )?waits sb[0-5]", code)
    # the whole MegaKernel's: a batch-1 bf16 step stages its weights (bulk copies, mbarrier waits)
    megakernel = _python(report + ["--sass", "megakernel"])
    assert "UBLKCP" in megakernel and "SYNCS.PHASECHK" in megakernel and "EXIT" in megakernel
    r = _python(report + ["--sass", "L0.nope"], ok=False)
    assert r.returncode != 0 and "no op 'L0.nope'" in r.stderr and "L0.o_proj" in r.stderr
    for option, rows in (([], 32), (["--option", "block_n=16"], 16)):  # the tiles, under tiling options
        o_proj = next(line for line in _python(report + ["--tiles", *option]).splitlines()
                      if line.startswith("L0.o_proj "))
        assert "gemv_residual" in o_proj and f"BLOCK_N={rows} " in o_proj and " tiles " in o_proj
    # under round robin over 8 CTAs, o's 8 tiles fill them, and the 8 one-row router tiles after them, which do not
    # need o, queue behind them
    tiles = _python([str(ROOT / "benchmarks" / "ptxas_report.py"), "--preset", "tiny-qwen3-moe", "--tiles", "--ctas",
                     "8", "--option", "router_tile_rows=1"]).splitlines()
    o_proj, router = (next(line for line in tiles if line.startswith(f"{name} ")) for name in ("L0.o_proj",
                                                                                           "L0.router_a"))
    assert " 8 tiles " in o_proj and "behind" not in o_proj, o_proj
    assert " 8 tiles " in router and router.endswith("ROW_TILES=8  8 behind L0.o_proj"), router
    code = _python(report + ["--code"]).splitlines()  # the MegaKernel's instructions by Python function
    counts = {line.split()[1]: int(line.split()[0]) for line in code[1:]}
    assert code[0] == f"{sum(counts.values())} instructions" and counts["device:wait_deps"] > 0
    assert any(where.startswith("linear:") for where in counts), list(counts)[:10]


def test_ptxas_report_prints_each_functions_registers():
    """``--functions``: the registers and spill instructions of the MegaKernel's driver and of each function of its
    own, as laid out in the one module (the sampling step calls its two tile functions)."""
    lines = _python([str(ROOT / "benchmarks" / "ptxas_report.py"), "--preset", "tiny-qwen3", "--sample", "8",
                     "--functions"]).splitlines()
    assert lines[0].split() == ["registers", "spill", "stores", "spill", "loads", "function"]
    rows = {line.split()[3]: [int(v) for v in line.split()[:3]] for line in lines[1:]}
    assert 100 < rows["megakernel"][0] <= 255, rows
    for tile in ("megagen.tasks.multinomial.sample_partial_tile", "megagen.tasks.multinomial.sample_pick_tile"):
        assert 0 < rows[tile][0] < rows["megakernel"][0], rows


# Instructions of the Qwen3-0.6B batch-1 greedy MegaKernel, one layer at real shapes (nvdisasm, sm_90a). A tile's
# code runs once a task and is fetched from L2 anew each time (the kernel's code is far larger than an SM's
# instruction caches): with its staged products unrolled by LLVM (19,784 instructions) warps waited for their
# instructions half of the time they spent in them (ncu), and kept a loop (18,264) the step took 4.5% less on an
# H100 (BENCHMARKS.md, 2026-11-27, twentieth session). Reading a task's arguments from shared memory, one load
# each, instead of a register reduction each took it to 12,968 (Qwen3-0.6B 1.3% faster, twenty-first session).
CODE_BUDGET = 14_000


def test_decode_megakernel_stays_within_its_code_budget():
    code = _python([str(ROOT / "benchmarks" / "ptxas_report.py"), "--preset", "Qwen3-0.6B", "--code"])
    instructions = int(code.split()[0])
    assert 10_000 < instructions <= CODE_BUDGET, (
        f"the Qwen3-0.6B MegaKernel has {instructions} instructions (budget {CODE_BUDGET}): code unrolled where a "
        "loop would do costs instruction fetch on every tile; see BENCHMARKS.md")


CUBIN_SCRIPT = textwrap.dedent('''
    import os, sys
    os.environ["TRITON_INTERPRET"] = "0"
    import torch
    import megagen
    from megagen.compiler import build_kernel, compile_ptx, cubin
    from megagen.tasks import scale

    x, y = torch.empty(512), torch.empty(512)
    g = megagen.TaskGraph("attribute_check", inputs=[x])
    g.add(scale, x=x, out=y, alpha=0.5, BLOCK=128)
    with open(sys.argv[1], "wb") as f:
        f.write(cubin(compile_ptx(build_kernel(g, "round_robin", num_ctas=2, interleaved=False), num_warps=4)))
''')


def test_ncu_attribute_sums_each_instructions_samples_into_its_function(tmp_path):
    """``benchmarks/ncu_attribute.py`` on a MegaKernel's cubin and an ncu source page made up for it: samples put
    on the scale tile's instructions are summed under ``elementwise:scale_tile``, the rest elsewhere; a page of
    another kernel is refused."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import ncu_attribute
    path = tmp_path / "kernel.cubin"
    (tmp_path / "cubin.py").write_text(CUBIN_SCRIPT)
    _python([str(tmp_path / "cubin.py"), str(path)])
    lines = ncu_attribute.instruction_lines(ncu_attribute.disassemble(str(path)))
    tile = [ncu_attribute.function_at(file, line) == "elementwise:scale_tile" for file, line, _ in lines]
    assert 0 < sum(tile) < len(lines)

    def page(instructions):
        rows = ['"Kernel Name","megakernel",',
                '"Address","Source","Warp Stall Sampling (All Samples)","stall_no_inst","stall_barrier"']
        rows += [f'"0x{16 * i:x}","{text}","{3 if t else 1}","{2 if t else 0}","1"'
                 for i, ((_, _, text), t) in enumerate(zip(instructions, tile))]
        out = tmp_path / "page.csv"
        out.write_text("\n".join(rows) + "\n")
        return ncu_attribute.read_samples(str(out))

    totals = ncu_attribute.attribute(lines, page(lines))
    assert totals["elementwise:scale_tile"]["samples"] == 3 * sum(tile)
    assert totals["elementwise:scale_tile"]["stall_no_inst"] == 2 * sum(tile)
    assert sum(c["samples"] for c in totals.values()) == 3 * sum(tile) + len(lines) - sum(tile)
    assert sum(c["stall_barrier"] for c in totals.values()) == len(lines)
    with pytest.raises(SystemExit, match="not the kernel ncu profiled"):
        ncu_attribute.attribute(lines, page(lines)[:-1])
