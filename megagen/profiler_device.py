"""Device side of the timeline profiler: each task's row of a profile buffer, written by the CTA that ran it.

Only a MegaKernel built with ``profile=True`` calls these; without it the generated source has none of them,
so profiling off costs nothing. The buffer is int64 ``[PROFILE_HEADER_ROWS + num_tasks, PROFILE_FIELDS]``:
row 0 is a header (its first slot is the logical clock), row ``1 + task`` holds the task's
(task, cta, sm, t_start, t_wait_done, t_end) from the latest launch that ran it.

``CLOCK`` picks the time source. "globaltimer" (a GPU): timestamps are ``%globaltimer``, nanoseconds on one
clock shared by all SMs, and sm is ``%smid``. "logical" (Triton's interpreter, which cannot run inline PTX):
a timestamp is the next value of the header's counter, so it orders events but does not measure time, and
sm is the (virtual) CTA.
"""
import triton
import triton.language as tl

PROFILE_FIELDS = tl.constexpr(6)  # task, cta, sm, t_start, t_wait_done, t_end
PROFILE_HEADER_ROWS = tl.constexpr(1)


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
