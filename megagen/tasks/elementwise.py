"""Built-in elementwise tasks on 1-D tensors: add, mul, scale. Tiles are contiguous blocks of elements."""
import triton
import triton.language as tl

from megagen.errors import TaskDefinitionError
from megagen.tasks.base import TilePlan, cdiv, register_task, tile_arange


@triton.jit
def binary_tile(x, y, out, n, tile, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tile * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(x + offs, mask=m)
    b = tl.load(y + offs, mask=m)
    if OP == "add":
        r = a + b
    else:
        r = a * b
    tl.store(out + offs, r.to(out.dtype.element_ty), mask=m)


def binary_reference(x, y, out, tile, OP, BLOCK):
    s = slice(tile * BLOCK, (tile + 1) * BLOCK)
    out[s] = x[s] + y[s] if OP == "add" else x[s] * y[s]


@triton.jit
def scale_tile(x, out, n, alpha, tile, BLOCK: tl.constexpr):
    offs = tile * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    r = tl.load(x + offs, mask=m).to(tl.float32) * alpha
    tl.store(out + offs, r.to(out.dtype.element_ty), mask=m)


def scale_reference(x, out, alpha, tile, BLOCK):
    s = slice(tile * BLOCK, (tile + 1) * BLOCK)
    out[s] = x[s].float() * alpha  # torch, like Triton, multiplies by alpha rounded to fp32


def _blocks(task: str, BLOCK: int, **tensors):
    """Tile the common length of 1-D tensors into blocks of BLOCK elements."""
    shapes = {n: tuple(t.shape) for n, t in tensors.items()}
    if any(len(s) != 1 for s in shapes.values()) or len(set(shapes.values())) != 1:
        raise TaskDefinitionError(f"task '{task}' needs 1-D tensors of one length (flatten with .view(-1)); "
                                  f"got {shapes}")
    strided = [n for n, t in tensors.items() if t.stride(0) != 1]
    if strided:
        raise TaskDefinitionError(f"task '{task}': {strided} must have unit stride (the tiles read contiguous "
                                  "blocks); pass a contiguous copy")
    if BLOCK < 1 or BLOCK & (BLOCK - 1):
        raise TaskDefinitionError(f"task '{task}': BLOCK must be a power of two, got {BLOCK}")
    n = next(iter(shapes.values()))[0]
    t = tile_arange(cdiv(n, BLOCK))
    return n, t.size, ((t * BLOCK, BLOCK),)


def _binary_plan(op):
    def plan(x, y, out, BLOCK=1024):
        n, tiles, region = _blocks(op, BLOCK, x=x, y=y, out=out)
        return TilePlan(tiles, reads={"x": region, "y": region}, writes={"out": region},
                        scalars={"n": n}, constexprs={"OP": op, "BLOCK": BLOCK}, cost=0.5)
    return plan


def _scale_plan(x, out, alpha, BLOCK=1024):
    n, tiles, region = _blocks("scale", BLOCK, x=x, out=out)
    return TilePlan(tiles, reads={"x": region}, writes={"out": region},
                    scalars={"n": n, "alpha": float(alpha)}, constexprs={"BLOCK": BLOCK}, cost=0.5)


add = register_task("add", binary_tile, inputs=("x", "y"), outputs=("out",), plan=_binary_plan("add"),
                    reference=binary_reference)
mul = register_task("mul", binary_tile, inputs=("x", "y"), outputs=("out",), plan=_binary_plan("mul"),
                    reference=binary_reference)
scale = register_task("scale", scale_tile, inputs=("x",), outputs=("out",), plan=_scale_plan,
                      reference=scale_reference)
