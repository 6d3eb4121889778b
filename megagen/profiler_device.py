"""Device side of the timeline profiler: each task's row of a profile buffer, written by the CTA that ran it.

Only a MegaKernel built with ``profile=True`` calls these; without it the generated source has none of them,
so profiling off costs nothing. The buffer is int64 ``[PROFILE_HEADER_ROWS + num_tasks, PROFILE_FIELDS]``:
row 0 is a header (its first slot is the logical clock), row ``1 + task`` holds the task's
(task, cta, sm, t_start, t_wait_done, t_end) from the latest launch that ran it, then PROFILE_MARKS marks: times
the tile function recorded itself with ``mark`` (0 where it recorded none).

Marks split a tile's run: a tile function that takes a ``marks`` argument gets, in a profiling build, its row's
mark slots and the buffer (and None otherwise, where ``mark`` compiles to nothing). The built-in GEMV tile marks
when its input is ready (the RMSNorm pass done), when its last products are done and when its stores are issued;
the attention tile when its queries are rotated, when its softmax is done and when its stores are issued.

``CLOCK`` picks the time source. "globaltimer" (a GPU): timestamps are ``%globaltimer``, nanoseconds on one
clock shared by all SMs, and sm is ``%smid``. "logical" (Triton's interpreter, which cannot run inline PTX):
a timestamp is the next value of the header's counter, so it orders events but does not measure time, and
sm is the (virtual) CTA.
"""
import triton
import triton.language as tl

from megagen.backend import interpreting

PROFILE_MARKS = tl.constexpr(3)
PROFILE_MARK_SLOT = tl.constexpr(6)  # a row's first mark
PROFILE_FIELDS = tl.constexpr(PROFILE_MARK_SLOT + PROFILE_MARKS)  # task, cta, sm, t_start, t_wait_done, t_end, marks
PROFILE_HEADER_ROWS = tl.constexpr(1)
# The clock marks read, as compiler.py picks CLOCK for a build: the logical one in Triton's interpreter, the global
# timer on a GPU (a jit function cannot call interpreting() itself)
MARKS_LOGICAL_CLOCK = tl.constexpr(interpreting())


@triton.jit
def profile_clock(profile, CLOCK: tl.constexpr):
    """Now: the global timer (ns) on a GPU, the next event number under the logical clock."""
    if CLOCK == "globaltimer":
        now = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False,
                                        pack=1)
    else:
        now = tl.atomic_add(profile, 1, sem="relaxed", scope="gpu")
    return now


@triton.jit
def profile_task(profile, task, cta, t_start, t_wait_done, CLOCK: tl.constexpr):
    """After release_tile: take the end time and write the task's row."""
    t_end = profile_clock(profile, CLOCK)
    if CLOCK == "globaltimer":
        sm = tl.inline_asm_elementwise("mov.u32 $0, %smid;", "=r", [], dtype=tl.int32, is_pure=True, pack=1)
    else:
        sm = cta
    row = profile + (PROFILE_HEADER_ROWS + task) * PROFILE_FIELDS
    tl.store(row, task)
    tl.store(row + 1, cta)
    tl.store(row + 2, sm)
    tl.store(row + 3, t_start)
    tl.store(row + 4, t_wait_done)
    tl.store(row + 5, t_end)


@triton.jit
def mark(marks, slot: tl.constexpr, after):
    """Record the time at mark ``slot`` of the task's profile row once ``after`` (a scalar or a vector) is computed.

    The clock is read by an instruction that takes ``after`` as its operand, so it follows it in the program (a bare
    read may be placed before the loads it is meant to follow); a reduction's result, whose barrier waits for every
    thread's share, makes the surest mark. The thread holding element 0 stores the time. A no-op where ``marks`` is
    None (not profiling), and then ``after`` is dead code the compiler drops."""
    if marks is not None:
        row, profile = marks
        tl.static_assert(slot < PROFILE_MARKS, "a task has PROFILE_MARKS mark slots")
        tl.static_assert(len(after.shape) <= 1, "mark after a scalar or a vector")
        if len(after.shape) == 0:
            bits = (tl.zeros((1,), tl.float32) + after.to(tl.float32)).to(tl.int32, bitcast=True)
        else:
            bits = after.to(tl.float32).to(tl.int32, bitcast=True)
        if not MARKS_LOGICAL_CLOCK:
            t = tl.inline_asm_elementwise("{\n\t.reg .b32 after;\n\tmov.b32 after, $1;\n\t"
                                          "mov.u64 $0, %globaltimer;\n\t}", "=l,r", [bits], dtype=tl.int64,
                                          is_pure=False, pack=1)
        else:
            t = bits.to(tl.int64) * 0 + tl.atomic_add(profile, 1, sem="relaxed", scope="gpu")  # in after's shape
        i = tl.arange(0, t.shape[0])
        tl.store(row + slot + i * 0, t, mask=i == 0)
