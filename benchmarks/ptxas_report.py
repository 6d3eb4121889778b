"""Registers and spills of a decode MegaKernel for an H100 (sm_90a), on any machine: no GPU needed.

    python benchmarks/ptxas_report.py --preset Llama-3.2-1B [--layers 1] [--batch 8] [--context 512]
        [--sample 64] [--option batch_block_rows=32 ...] [--ops] [--ctas 264]

Every task of a MegaKernel shares its registers, so a task that needs more than the others leave makes the
whole kernel spill, and every phase of a step slower (BENCHMARKS.md: a pick that took all batch rows at once
cost Llama-3.2-1B 13% at batch 8). This compiles the decode step of a preset's first ``--layers`` layers (real
shapes, real vocabulary, random bf16 weights) as ``megagen bench`` builds it (a cache of ``--context`` + 16
slots), tiled for ``--ctas`` CTAs (264: two an SM of an H100), with Triton's bundled ptxas, and prints the
kernel's registers and spill bytes a thread. ``--ops`` also compiles each op's own kernel, as the op-by-op PDL
baseline launches it, and lists what every task needs on its own. ``--sample K`` builds the sampling step (top-k
up to K) instead of the greedy one. ``--sass OP`` prints the machine code of one op's own kernel instead (e.g.
``--sass lm_head``; ops of layer 0 are ``L0.q_proj``, ``L0.attention``, ...; each instruction ends with the
scoreboards it sets and waits for), ``--sass megakernel`` the whole MegaKernel's, ``--tiles`` each op's tiles
and tile shape (and, under round robin, its tiles that queue behind an op they do not depend on), and ``--code`` the
MegaKernel's instructions by the Python function they came from: a tile's code is fetched anew each time the tile
runs, so code unrolled where a loop would do costs every tile time (``benchmarks/ncu_attribute.py`` measures it on a
GPU). ``--functions`` prints the registers and spill
instructions of the MegaKernel's driver and of each function of its own (a ``noinline`` tile function) as ptxas
laid them out in the one module, where a callee takes more registers than in its own kernel (``--ops``): Qwen3-0.6B's
sampling pick 134 there against 96, and a pick of 157 there made the driver spill (BENCHMARKS.md, twenty-first
session).
"""
import argparse
import collections
import json
import os
import re
import tempfile

os.environ["TRITON_INTERPRET"] = "0"  # Triton's compiler, not its interpreter

import networkx as nx  # noqa: E402
import torch  # noqa: E402

from megagen import models  # noqa: E402
from megagen.bench import build_options  # noqa: E402
from megagen.codegen import variants_of  # noqa: E402
from megagen.compiler import build_kernel, compile_op_ptx, compile_ptx, cubin, ptxas_usage, sass  # noqa: E402
from megagen.decode import DecodeState, Tiling, decode_graph  # noqa: E402
from megagen.errors import MegagenError  # noqa: E402
from megagen.runner import TILING_OPTIONS  # noqa: E402
from megagen.trace import trace  # noqa: E402
from ncu_attribute import disassemble, function_at, instruction_lines  # noqa: E402


def decode_step(preset: str, layers: int, batch: int, context: int, options: dict, sample: int | None, ctas: int):
    """The decode graph of the preset's first ``layers`` layers, as megagen bench builds it."""
    unknown = sorted(set(options) - set(TILING_OPTIONS))
    if unknown:
        raise MegagenError(f"ptxas_report takes tiling options only ({', '.join(TILING_OPTIONS)}); got {unknown}")
    decoder = trace(models.random_model(preset, dtype=torch.bfloat16, num_hidden_layers=layers))
    return decode_graph(decoder, DecodeState.allocate(decoder, batch, context + 16), batch, Tiling(ctas, **options),
                        max_top_k=sample)


def op_sass(graph, name: str) -> str:
    """The SASS of op ``name``'s own kernel (compiled as the PDL baseline launches it)."""
    variants, op_variant = variants_of(graph)
    op = next((op for op in graph.ops if op.name == name), None)
    if op is None:
        raise MegagenError(f"the graph has no op {name!r}; its ops are {', '.join(o.name for o in graph.ops)}")
    return sass(compile_op_ptx(next(v for v in variants if v.id == op_variant[op.index])))


def op_tiles(graph, ctas: int) -> str:
    """A line an op: its task, its tiles, the constexprs that shape them and, under round robin over ``ctas`` CTAs
    (task i of the graph's order on CTA i mod ctas), the tiles that queue behind a tile of an op they do not depend
    on, by that op. Those wait for nothing they need: early routing's router tiles, put before o's, held up 24 o
    tiles a layer and made the step slower (BENCHMARKS.md, thirtieth session)."""
    shape = ("TILE_ROWS", "BLOCK_N", "BLOCK_K", "CHUNK", "ROW_TILES", "I", "ROWS")
    last, first, lines = {}, 0, []  # last: CTA -> the op of its latest tile so far
    for op in graph.ops:
        needs = nx.ancestors(graph.op_graph, op.name)
        on = [(first + t) % ctas for t in range(op.num_tiles)]
        behind = collections.Counter(last[c] for c in on if c in last and last[c] not in needs and last[c] != op.name)
        last.update((c, op.name) for c in on)
        first += op.num_tiles
        lines.append(f"{op.name:28s} {op.task.name:28s} {op.num_tiles:5d} tiles  "
                     + " ".join(f"{k}={op.plan.constexprs[k]}" for k in shape if k in op.plan.constexprs)
                     + "".join(f"  {n} behind {name}" for name, n in behind.items()))
    return "\n".join(lines)


def megakernel_ptx(graph, ctas: int) -> str:
    """The PTX of the graph's MegaKernel (round_robin, the GPU driver) for ``ctas`` CTAs."""
    return compile_ptx(build_kernel(graph, "round_robin", num_ctas=ctas, interleaved=False), num_warps=4)


def disassembled(ptx: str) -> str:
    """The PTX's kernel assembled (ptxas) and disassembled with its line table (nvdisasm)."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin(ptx))
        f.flush()
        return disassemble(f.name)


def code_by_function(ptx: str) -> list[tuple[str, int]]:
    """The kernel's instructions counted by the Python function (``module:def``) each came from, most first."""
    lines = instruction_lines(disassembled(ptx))
    return collections.Counter(function_at(path, line) for path, line, _ in lines).most_common()


def registers_by_function(ptx: str) -> list[tuple[str, int, int, int]]:
    """(function, distinct registers, spill stores, spill loads) for the MegaKernel's driver (``megakernel``) and
    each function of its own it calls (a ``noinline`` tile function), as ptxas laid them out in the one module
    (a callee's registers there are more than its own kernel's, ``--ops``). Registers: the distinct ``R`` registers
    its instructions name; spills: its ``STL`` and ``LDL`` instructions."""
    found, name = {}, None
    for line in disassembled(ptx).splitlines():
        label = re.match(r"^(\.text\.megakernel|\$\S+):$", line)
        if label:
            # $megakernel$megagen_$_tasks_$_multinomial_$_sample_pick_tile__Pi64_...: megagen.tasks....sample_pick_tile
            name = label.group(1)
            if name == ".text.megakernel":
                name = "megakernel"
            elif name.startswith("$__internal"):  # CUDA's own helpers, e.g. a division's slow path
                name = name.split("$__", 2)[-1]
            else:
                name = name.removeprefix("$megakernel$").split("__")[0].replace("_$_", ".")
            found.setdefault(name, [set(), 0, 0])
            continue
        if name is None or not re.search(r"/\*[0-9a-f]{4,}\*/", line):
            continue
        entry = found[name]
        entry[0].update(int(r) for r in re.findall(r"\bR(\d+)\b", line))
        entry[1] += bool(re.search(r"\bSTL(\.\w+)*\b", line))
        entry[2] += bool(re.search(r"\bLDL(\.\w+)*\b", line))
    return [(n, len(regs), stores, loads) for n, (regs, stores, loads) in found.items() if regs]


def report(preset: str, layers: int, batch: int, context: int, options: dict, sample: int | None, ctas: int,
           ops: bool) -> dict:
    graph = decode_step(preset, layers, batch, context, options, sample, ctas)
    result = {"preset": preset, "layers": layers, "batch": batch, "context": context, "options": options,
              "sample": sample, "ctas": ctas, "megakernel": ptxas_usage(megakernel_ptx(graph, ctas))}
    if ops:
        variants, op_variant = variants_of(graph)
        result["ops"] = [{"task": v.task.name, "ops": [op.name for op in graph.ops if op_variant[op.index] == v.id],
                          **ptxas_usage(compile_op_ptx(v))} for v in variants]
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", required=True, help="a preset of models/presets.py, e.g. Qwen3-0.6B")
    ap.add_argument("--layers", type=int, default=1, help="keep the preset's first N layers (default 1)")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--context", type=int, default=512, help="the cache holds this many tokens and 16 more")
    ap.add_argument("--sample", type=int, default=None, metavar="K",
                    help="the sampling step, ranking up to K tokens a row (a power of two), not the greedy one")
    ap.add_argument("--option", action="append", default=[], help="a tiling option, e.g. batch_block_rows=32")
    ap.add_argument("--ctas", type=int, default=264, help="CTAs the phases are tiled for (264: an H100)")
    ap.add_argument("--ops", action="store_true", help="also each op's own kernel (the PDL baseline's)")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    ap.add_argument("--sass", metavar="OP", help="print the SASS of this op's own kernel instead, e.g. lm_head, or "
                                                 "of the whole MegaKernel: megakernel")
    ap.add_argument("--tiles", action="store_true", help="print each op's tiles and tile shape instead")
    ap.add_argument("--code", action="store_true", help="print the MegaKernel's instructions by function instead")
    ap.add_argument("--functions", action="store_true",
                    help="print the registers and spill instructions of the MegaKernel's driver and of each function "
                         "of its own instead")
    args = ap.parse_args()
    if args.sass or args.tiles or args.code or args.functions:
        graph = decode_step(args.preset, args.layers, args.batch, args.context, build_options(args.option),
                            args.sample, args.ctas)
        if args.functions:
            print("registers  spill stores  spill loads  function")
            print("\n".join(f"{regs:9d}  {stores:12d}  {loads:11d}  {name}" for name, regs, stores, loads
                            in registers_by_function(megakernel_ptx(graph, args.ctas))))
        elif args.code:
            counts = code_by_function(megakernel_ptx(graph, args.ctas))
            print(f"{sum(n for _, n in counts)} instructions")
            print("\n".join(f"{n:7d}  {where}" for where, n in counts))
        elif args.sass == "megakernel":
            print(sass(megakernel_ptx(graph, args.ctas)))
        else:
            print(op_sass(graph, args.sass) if args.sass else op_tiles(graph, args.ctas))
        return
    r = report(args.preset, args.layers, args.batch, args.context, build_options(args.option), args.sample,
               args.ctas, args.ops)
    if args.json:
        print(json.dumps(r, indent=1))
        return
    mk = r["megakernel"]
    print(f"{args.preset}, {args.layers} layer(s), batch {args.batch}, {'sampling' if args.sample else 'greedy'}, "
          f"options {r['options']}, {args.ctas} CTAs, sm_90a: the MegaKernel uses {mk['registers']} registers a "
          f"thread, {mk['spill_stores']} bytes of spill stores and {mk['spill_loads']} of spill loads")
    for o in r.get("ops", []):
        names = ", ".join(o["ops"][:3]) + (f" (+{len(o['ops']) - 3})" if len(o["ops"]) > 3 else "")
        print(f"  {o['task']:28s} {o['registers']:4d} registers, {o['spill_stores']:4d} bytes spilled  {names}")


if __name__ == "__main__":
    main()
