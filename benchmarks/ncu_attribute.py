"""Where a MegaKernel's warps stall, by the Python function each machine instruction came from.

    ncu --profile-from-start off --clock-control none -k regex:megakernel --section WarpStateStats \\
        --section SourceCounters -o step python benchmarks/ncu_step.py --model Qwen3-0.6B --cubin step.cubin
    ncu --import step.ncu-rep --page source --csv --print-source sass | gzip > step_sass.csv.gz
    python benchmarks/ncu_attribute.py step.cubin step_sass.csv.gz [--by line] [--top 40]

Nsight Compute samples each warp's state at intervals and reports the samples per SASS instruction (the source
page, as CSV). A MegaKernel inlines every task into one function, so the SASS alone does not say which task an
instruction belongs to; the cubin's line table does (Triton keeps line information). This disassembles the cubin
with Triton's bundled nvdisasm, takes each instruction's file and line, finds the Python function (``def``) around
that line, and sums the samples, and the stall reasons that matter most to a MegaKernel, per function. The cubin
must be the one ncu profiled (``ncu_step.py --cubin`` writes it): the instructions are matched one to one.

Columns (percent of all samples): ``no_inst`` waits for its instructions to be fetched (code run once a tile and
not in the instruction caches), ``barrier`` for other warps at a CTA barrier, ``long_sb`` for a global load,
``short_sb`` for shared memory or a shuffle, ``membar`` for a memory fence, ``wait`` a fixed latency.
"""
from __future__ import annotations

import argparse
import ast
import collections
import csv
import functools
import gzip
import io
import os
import re
import subprocess
import sys
import tempfile

STALLS = ("stall_no_inst", "stall_barrier", "stall_long_sb", "stall_short_sb", "stall_membar", "stall_wait")
_INSTRUCTION = re.compile(r"\s*/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;?\s*$")
_LINE = re.compile(r'\s*//## File "([^"]+)", line (\d+)')


def instruction_lines(sass: str) -> list[tuple[str, int, str]]:
    """(file, line, instruction) of each instruction of ``nvdisasm -c -gi`` output, in address order."""
    where, out = ("?", 0), []
    for text in sass.splitlines():
        if m := _LINE.match(text):
            where = (m.group(1), int(m.group(2)))
        elif m := _INSTRUCTION.match(text):
            out.append((*where, m.group(1)))
    return out


def disassemble(cubin: str) -> str:
    """``nvdisasm -c -gi`` of a cubin file (gzipped or not), with Triton's bundled nvdisasm."""
    import triton
    nvdisasm = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "nvdisasm")
    with tempfile.TemporaryDirectory() as tmp:
        if cubin.endswith(".gz"):
            with gzip.open(cubin, "rb") as src, open(os.path.join(tmp, "kernel.cubin"), "wb") as dst:
                dst.write(src.read())
            cubin = dst.name
        return subprocess.run([nvdisasm, "-c", "-gi", cubin], capture_output=True, text=True, check=True).stdout


def read_samples(path: str) -> list[dict]:
    """ncu's source page (``--page source --csv --print-source sass``, gzipped or not): a row per instruction."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        text = f.read()
    header = text.index('"Address"')  # the page starts with the kernel's name
    rows = []
    for row in csv.DictReader(io.StringIO(text[header:])):
        def number(key):
            try:
                return float(row.get(key, "0").replace(",", ""))
            except ValueError:
                return 0.0
        rows.append({"source": row["Source"].strip(), "samples": number("Warp Stall Sampling (All Samples)"),
                     **{s: number(s) for s in STALLS}})
    return rows


@functools.lru_cache(None)
def _functions(path: str) -> list[tuple[int, int, str]]:
    if not os.path.exists(path) and "/triton/" in path:  # Triton's own source, where the GPU machine keeps it
        import triton
        path = os.path.join(os.path.dirname(triton.__file__), path.rsplit("/triton/", 1)[1])
    elif not os.path.exists(path) and "/megagen/" in path:  # a tree that is gone: this checkout's (lines may differ)
        path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "megagen",
                            path.rsplit("/megagen/", 1)[1])
    try:
        with open(path) as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError):
        return []
    return [(n.lineno, n.end_lineno, n.name) for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]


def function_at(path: str, line: int) -> str:
    """``module:function`` of the innermost ``def`` around ``line`` of ``path`` (``module:?`` outside any)."""
    spans = [(b - a, name) for a, b, name in _functions(path) if a <= line <= b]
    return f"{os.path.basename(path).removesuffix('.py')}:{min(spans)[1] if spans else '?'}"


def _opcode(instruction: str) -> str:
    return re.sub(r"^@!?U?P\w+\s+", "", instruction.strip()).split(" ")[0].rstrip(";")


def attribute(lines: list[tuple[str, int, str]], rows: list[dict], by: str = "function") -> dict:
    """Samples and stall samples summed per function (or per file:line), with the instructions each has."""
    if len(lines) != len(rows):
        raise SystemExit(f"ncu_attribute: the cubin has {len(lines)} instructions, the samples {len(rows)}: "
                         "not the kernel ncu profiled")
    mismatched = sum(_opcode(text) != _opcode(row["source"]) for (_, _, text), row in zip(lines, rows))
    if mismatched > len(rows) // 100:
        raise SystemExit(f"ncu_attribute: {mismatched} of {len(rows)} instructions differ: not the kernel ncu profiled")
    totals = collections.defaultdict(collections.Counter)
    for (path, line, _), row in zip(lines, rows):
        key = function_at(path, line) if by == "function" else f"{os.path.basename(path)}:{line}"
        totals[key]["instructions"] += 1
        for k in ("samples",) + STALLS:
            totals[key][k] += row[k]
    return totals


def table(totals: dict, top: int) -> str:
    everything = sum(c["samples"] for c in totals.values()) or 1.0
    names = [s.removeprefix("stall_") for s in STALLS]
    out = [f"{'where':44s} {'samples':>8s} {'instrs':>7s} " + " ".join(f"{n:>8s}" for n in names),
           f"(percent of all {everything:.0f} samples)"]
    for key, c in sorted(totals.items(), key=lambda kv: -kv[1]["samples"])[:top]:
        out.append(f"{key[:44]:44s} {100 * c['samples'] / everything:8.2f} {c['instructions']:7d} "
                   + " ".join(f"{100 * c[s] / everything:8.2f}" for s in STALLS))
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cubin", help="the profiled kernel's cubin (ncu_step.py --cubin), .gz or not")
    ap.add_argument("samples", help="ncu's source page as CSV (--page source --csv --print-source sass), .gz or not")
    ap.add_argument("--by", choices=("function", "line"), default="function")
    ap.add_argument("--top", type=int, default=40)
    args = ap.parse_args(argv)
    print(table(attribute(instruction_lines(disassemble(args.cubin)), read_samples(args.samples), args.by),
                args.top))


if __name__ == "__main__":
    sys.exit(main())
