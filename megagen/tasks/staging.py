"""Weight staging: a tile copies its whole weight box into shared memory before it waits for its input.

A GEMV tile at batch 1 streams its weights one register block at a time after its wait, so each phase costs
a chain of HBM round trips however early a CTA reached the tile. With staging, the tile's prefetch (run
before the wait) issues bulk asynchronous copies (``cp.async.bulk``, the TMA engine) of the whole box into
shared memory, and the tile, once its input is ready, multiplies from there. HBM then works while the CTA
waits (most tiles are reached microseconds before their producers finish), and no register holds a weight
before its products.

Triton has no shared-memory allocation of its own making, so the staging area is near the end of the launch's
dynamic shared memory (below the task's argument row, ``shared_end``), which the runtime enlarges by as much
(``MegaKernel``); Triton's own buffers start at its beginning. A staged plan sets the constexpr ``STAGE_BYTES`` to
the area its tiles take (``area_bytes``), and the area is the largest of a build's. Layout of a tile's area, each
part on a 128-byte line (the runtime puts the area on one): the mbarrier the copies complete on, the weight box
(row-major), then the tile's formed input in fp32. A warp's 16-byte shared loads of 512 contiguous bytes take four
wavefronts where they start on a line, five where they do not. With the box and the input 16 bytes off their lines
Qwen3-0.6B measured 1.4% slower a step than main's layout (on lines too), and on lines 1.7% faster (H100, another
process of the same run each; BENCHMARKS.md, 2026-11-27).

The copies run in the async proxy: the barrier is initialised again (phase 0) for every staged task, after the
CTA barrier that ends the task before (so no thread still reads the area), with a proxy fence before the
copies. A staged task whose wait gave up still waits for its copies (``stage_wait``) before the CTA moves on.

A copy under way holds up the other loads, stores and fences of its SM until it lands, and a phase whose tiles are
reached at once would start every SM's copy at once: Qwen3-0.6B's 128 gate/up copies of 96 KB, started as the
attention ends, kept the o tiles' input loads 2 us behind them, and an o tile's release took 3.2 us where its SM's
other CTA had just started one, 0.5 where it had started 3 us before or more (H100 profiles). So a phase starts its
copies at a set rate (``stage_after``: an op's row tile r of R starts r / R of the phase's spread after reaching
it; ``Tiling.copy_issue_rate``), near the rate HBM streams them (H100).

Only GPU drivers stage: the interpreter runs no inline PTX, so there ``stage`` is None and tiles take their
register path.
"""
import triton
import triton.language as tl

# The largest area a tile may take. Two CTAs an SM must stay resident: an H100 SM has 228 KB of shared memory and
# keeps 1 KB a CTA, and Qwen3-0.6B's MegaKernel takes 12 KB of Triton's own and a 128-byte argument row:
# 2 x (100 KB + 128 + 12 KB + 128 + 1 KB) = 226.5 KB. 100 KB holds 48 rows of 1024 bf16 columns and their input.
STAGE_MAX_BYTES = 100 * 1024 + 128
LINE = 128
_LINE = tl.constexpr(LINE)  # also the weight box's offset: the mbarrier (8 bytes) has the area's first line


@triton.constexpr_function
def _lines(nbytes):
    """nbytes rounded up to whole 128-byte lines (on the host and in a kernel)."""
    return (nbytes + LINE - 1) // LINE * LINE


def area_bytes(box_bytes: int, input_columns: int) -> int:
    """The area a tile takes: the mbarrier, a weight box of ``box_bytes`` and a formed input of ``input_columns``
    fp32 values."""
    return LINE + _lines(box_bytes) + input_columns * 4


@triton.jit
def _input_part(stage, BOX_BYTES: tl.constexpr):
    """The address of the formed input, after a weight box of BOX_BYTES."""
    return stage + _LINE + _lines(BOX_BYTES)


@triton.jit
def shared_end():
    """The end of the CTA's dynamic shared memory. The runtime enlarges it past Triton's own buffers by what the
    GPU drivers keep there: the task's argument row at the very end, the staging area below it."""
    return tl.inline_asm_elementwise("{ .reg .u32 a, s; mov.u32 a, global_smem; mov.u32 s, %dynamic_smem_size; "
                                     "add.u32 $0, a, s; }", "=r", [], dtype=tl.int32, is_pure=True, pack=1)


@triton.jit
def stage_area(top, AREA: tl.constexpr):
    """The staging area's shared-memory address: the AREA bytes below ``top``."""
    return top - AREA


@triton.jit
def _copy(dst, src, nbytes, bar):
    """One bulk copy of nbytes from global address src into shared dst, completing on the mbarrier (L2: evict
    first, as the register path's weight loads)."""
    tl.inline_asm_elementwise(
        "{ .reg .pred p; .reg .u32 t; .reg .b64 pol; mov.u32 t, %tid.x; setp.eq.u32 p, t, 0;\n"
        "createpolicy.fractional.L2::evict_first.b64 pol, 1.0;\n"
        "@p cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [$1], [$2], $3, [$4], "
        "pol;\n"
        "mov.u32 $0, 0; }", "=r,r,l,r,r", [dst, src, nbytes, bar], dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def stage_box(stage, src, rows, row_bytes, stride_bytes):
    """Start copying ``rows`` rows of ``row_bytes`` (a multiple of 16) at ``src`` (a 16-byte aligned pointer),
    ``stride_bytes`` apart, into the area's box, row after row; one copy where the rows are contiguous."""
    bar = stage
    total = rows * row_bytes
    tl.inline_asm_elementwise(
        "{ .reg .pred p; .reg .u32 t; mov.u32 t, %tid.x; setp.eq.u32 p, t, 0;\n"
        "@p mbarrier.init.shared::cta.b64 [$1], 1;\n"
        "@p fence.mbarrier_init.release.cluster;\n"
        "@p fence.proxy.async.shared::cta;\n"
        "@p mbarrier.arrive.expect_tx.shared::cta.b64 _, [$1], $2;\n"
        "mov.u32 $0, 0; }", "=r,r,r", [bar, total], dtype=tl.int32, is_pure=False, pack=1)
    base = src.to(tl.int64)
    if stride_bytes == row_bytes:
        _copy(stage + _LINE, base, total, bar)
    else:
        for r in range(rows):
            _copy(stage + _LINE + r * row_bytes, base + r * stride_bytes, row_bytes, bar)


@triton.jit
def _sm_clock():
    """The SM's cycle counter (``%clock64``)."""
    return tl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)


@triton.jit
def stage_after(cycles):
    """Spin until ``cycles`` SM cycles have passed: a staged tile's copy starts that much later."""
    start = _sm_clock()
    now = start
    while now - start < cycles:
        now = _sm_clock()


@triton.jit
def stage_wait(stage):
    """Wait until the staged copies have landed (a no-op without a staging area)."""
    if stage is not None:
        done = tl.full((), 0, tl.int32)
        while done == 0:
            done = tl.inline_asm_elementwise(
                "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [$1], 0; selp.u32 $0, 1, 0, p; }",
                "=r,r", [stage], dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def opaque(n):
    """``n`` (int32), hidden from the compiler: a loop up to it stays a loop. (LLVM unrolls a short loop of known
    trip count whole, and a tile's unrolled code is fetched anew from L2 each time the tile runs.)"""
    return tl.inline_asm_elementwise("mov.u32 $0, $1;", "=r,r", [n], dtype=tl.int32, is_pure=True, pack=1)


@triton.jit
def stage_input(stage, cols, values, mask, CHUNK: tl.constexpr, BOX_BYTES: tl.constexpr):
    """Store the formed input ``values`` (fp32) of chunk columns ``cols`` where ``mask``, in the area's input
    part (after a box of BOX_BYTES): column 8q + i at quad q's first plane (i < 4) or second plane (i >= 4), so the
    32 lanes of a warp each read one plane's 16 bytes of consecutive quads without bank conflicts. Follow with a
    CTA barrier."""
    q = cols // 8
    i = cols % 8
    addr = _input_part(stage, BOX_BYTES) + tl.where(i < 4, q * 16 + i * 4, CHUNK * 2 + q * 16 + (i - 4) * 4)
    tl.inline_asm_elementwise("{ .reg .pred p; setp.ne.u32 p, $3, 0; @p st.shared.f32 [$1], $2; mov.u32 $0, 0; }",
                              "=r,r,r,r", [addr, values.to(tl.float32), mask.to(tl.int32)], dtype=tl.int32,
                              is_pure=False, pack=1)


def _products_asm(widen: str) -> tl.constexpr:
    """The 8-product sum of one quad: its 16-bit weights ($1), the input's two planes ($2, $3), widened by
    ``widen`` into a..h."""
    return tl.constexpr(
        "{ .reg .b32 w0, w1, w2, w3; .reg .b16 h0, h1, h2, h3, h4, h5, h6, h7;\n"
        ".reg .f32 a, b, c, d, e, f, g, h, x0, x1, x2, x3, x4, x5, x6, x7, s;\n"
        "ld.shared.v4.b32 {w0, w1, w2, w3}, [$1];\n"
        "ld.shared.v4.f32 {x0, x1, x2, x3}, [$2];\n"
        "ld.shared.v4.f32 {x4, x5, x6, x7}, [$3];\n"
        + widen +
        "mul.f32 s, a, x0; fma.rn.f32 s, b, x1, s; fma.rn.f32 s, c, x2, s; fma.rn.f32 s, d, x3, s;\n"
        "fma.rn.f32 s, e, x4, s; fma.rn.f32 s, f, x5, s; fma.rn.f32 s, g, x6, s; fma.rn.f32 $0, h, x7, s; }")


_PRODUCTS_BF16 = _products_asm("shl.b32 a, w0, 16; and.b32 b, w0, 0xffff0000;\n"
                               "shl.b32 c, w1, 16; and.b32 d, w1, 0xffff0000;\n"
                               "shl.b32 e, w2, 16; and.b32 f, w2, 0xffff0000;\n"
                               "shl.b32 g, w3, 16; and.b32 h, w3, 0xffff0000;\n")
_PRODUCTS_FP16 = _products_asm("mov.b32 {h0, h1}, w0; cvt.f32.f16 a, h0; cvt.f32.f16 b, h1;\n"
                               "mov.b32 {h2, h3}, w1; cvt.f32.f16 c, h2; cvt.f32.f16 d, h3;\n"
                               "mov.b32 {h4, h5}, w2; cvt.f32.f16 e, h4; cvt.f32.f16 f, h5;\n"
                               "mov.b32 {h6, h7}, w3; cvt.f32.f16 g, h6; cvt.f32.f16 h, h7;\n")


@triton.jit
def staged_products(stage, rows, quads, ROW_BYTES: tl.constexpr, CHUNK: tl.constexpr, BOX_BYTES: tl.constexpr,
                    FP16: tl.constexpr):
    """[rows, quads] sums of 8 products: weights row r, columns 8q..8q+7 of the staged box (16-bit, one 16-byte
    shared load) times the same columns of the staged input (fp32), summed in order with fused multiply-adds."""
    w_addr = stage + _LINE + rows[:, None] * ROW_BYTES + quads[None, :] * 16
    x_addr = (_input_part(stage, BOX_BYTES) + quads * 16)[None, :] + tl.zeros_like(w_addr)
    if FP16:
        return tl.inline_asm_elementwise(_PRODUCTS_FP16, "=f,r,r,r", [w_addr, x_addr, x_addr + CHUNK * 2],
                                         dtype=tl.float32, is_pure=False, pack=1)
    else:
        return tl.inline_asm_elementwise(_PRODUCTS_BF16, "=f,r,r,r", [w_addr, x_addr, x_addr + CHUNK * 2],
                                         dtype=tl.float32, is_pure=False, pack=1)
