"""Built-in tasks at the ends of a decode step: token embedding, and greedy sampling (argmax over the
vocabulary in two stages, then the next token and the position advance written on the device).

Under tensor parallelism each rank holds a slice of the vocabulary: ``argmax_partial`` finds
the best of each block of its slice (``offset``: the slice's first token id; ``valid``: its
real columns), and ``greedy_pick`` reads every rank's block results (a peer input) and picks
the best, so all ranks write the same next token.
"""
import torch
import triton
import triton.language as tl

from megagen.errors import TaskDefinitionError
from megagen.tasks.base import ALL, TilePlan, cdiv, register_task, tile_arange
from megagen.tasks.comm import peer_pointer

MAX_ARGMAX_ROWS = 8192  # logits an argmax tile holds at once (64 registers a thread at 4 warps)


@triton.constexpr_function
def padded(n):
    """n rounded up to a power of two, the length tl.arange takes."""
    return triton.next_power_of_2(n)


@triton.jit
def embedding_tile(tokens, table, out, tile, B, HIDDEN: tl.constexpr, BLOCK: tl.constexpr, COL_TILES: tl.constexpr):
    b = tile // COL_TILES
    cols = (tile % COL_TILES) * BLOCK + tl.arange(0, BLOCK)
    token = tl.load(tokens + b)
    row = tl.load(table + token * HIDDEN + cols, mask=cols < HIDDEN)
    tl.store(out + b * HIDDEN + cols, row.to(out.dtype.element_ty), mask=cols < HIDDEN)


def embedding_reference(tokens, table, out, tile, BLOCK, COL_TILES):
    b, c = divmod(tile, COL_TILES)
    cols = slice(c * BLOCK, (c + 1) * BLOCK)
    out[0, b, cols] = table[tokens[b], cols]


def _embedding_plan(tokens, table, out, BLOCK=1024):
    vocab, hidden = table.shape
    if out.dim() != 3 or out.shape[0] != 1 or out.shape[2] != hidden or not out.is_contiguous():
        raise TaskDefinitionError(f"embedding: out must be a contiguous [1, B, {hidden}] tensor, got {tuple(out.shape)}")
    batch = out.shape[1]
    if tokens.dim() != 1 or tokens.shape[0] < batch or not table.is_contiguous():
        raise TaskDefinitionError(f"embedding: tokens must be a [B] vector and the table contiguous; got tokens "
                                  f"{tuple(tokens.shape)}")
    BLOCK = min(BLOCK, triton.next_power_of_2(hidden))
    col_tiles = cdiv(hidden, BLOCK)
    t = tile_arange(batch * col_tiles)
    b, c = t // col_tiles, t % col_tiles
    cols = (c * BLOCK, BLOCK)
    return TilePlan(t.size, reads={"tokens": ((b, 1),), "table": (ALL, cols)}, writes={"out": ((0, 1), (b, 1), cols)},
                    scalars={"B": batch}, constexprs={"HIDDEN": hidden, "BLOCK": BLOCK, "COL_TILES": col_tiles},
                    cost=0.5)


@triton.jit
def argmax_partial_tile(logits, value, index, tile, B, offset, valid, V: tl.constexpr, ROWS: tl.constexpr,
                        BLOCKS: tl.constexpr):
    b = tile // BLOCKS
    j = tile % BLOCKS
    i = tl.arange(0, padded(ROWS))
    cols = j * ROWS + i
    x = tl.load(logits + b * V + cols, mask=(i < ROWS) & (cols < valid), other=float("-inf")).to(tl.float32)
    best, where = tl.max(x, axis=0, return_indices=True, return_indices_tie_break_left=True)
    tl.store(value + tile, best)
    tl.store(index + tile, offset + (j * ROWS + where).to(tl.int64))


def argmax_partial_reference(logits, value, index, tile, offset, valid, ROWS, BLOCKS):
    b, j = divmod(tile, BLOCKS)
    x = logits[0, b, j * ROWS:min((j + 1) * ROWS, valid)].float()
    if x.numel() == 0:  # a block of padding only
        value[b, j], index[b, j] = float("-inf"), offset + j * ROWS
        return
    where = x.argmax()  # the first maximum, as return_indices_tie_break_left
    value[b, j] = x[where]
    index[b, j] = offset + j * ROWS + where


def _argmax_plan(logits, value, index, offset=0, valid=None, ROWS=4096):
    """Blocks of ROWS logits (at batch 1 the decode graph gives each lm_head tile's rows a block, so a block waits
    for one tile); value and index are [B, blocks]."""
    if logits.dim() != 3 or logits.shape[0] != 1 or not logits.is_contiguous():
        raise TaskDefinitionError(f"argmax_partial: logits must be a contiguous [1, B, V] tensor, "
                                  f"got {tuple(logits.shape)}")
    _, batch, vocab = logits.shape
    if not isinstance(ROWS, int) or not 1 <= ROWS <= MAX_ARGMAX_ROWS:
        raise TaskDefinitionError(f"argmax_partial: ROWS (logits a block) must be an int in 1..{MAX_ARGMAX_ROWS}, "
                                  f"got {ROWS!r}")
    blocks = cdiv(vocab, ROWS)
    if tuple(value.shape) != (batch, blocks) or tuple(index.shape) != (batch, blocks):
        raise TaskDefinitionError(f"argmax_partial: value and index must be [B, blocks] = {(batch, blocks)}")
    valid = vocab if valid is None else valid
    if not 0 <= valid <= vocab:  # 0: a rank whose slice is all padding (tiny vocabularies)
        raise TaskDefinitionError(f"argmax_partial: valid must be in 0..{vocab} (the logits' width), got {valid}")
    t = tile_arange(batch * blocks)
    b, j = t // blocks, t % blocks
    return TilePlan(t.size, reads={"logits": ((0, 1), (b, 1), (j * ROWS, ROWS))},
                    writes={"value": ((b, 1), (j, 1)), "index": ((b, 1), (j, 1))},
                    scalars={"B": batch, "offset": int(offset), "valid": int(valid)},
                    constexprs={"V": vocab, "ROWS": ROWS, "BLOCKS": blocks}, cost=0.5)


@triton.jit
def best_of_blocks(value, index, rows, live, BLOCKS: tl.constexpr, BLOCKS_PAD: tl.constexpr, WORLD: tl.constexpr):
    """The tokens of the best values of batch rows ``rows`` (a vector; ``live`` masks rows past the batch) over
    every rank's blocks: argmax_partial's outputs, or sample_partial's without truncation (peer inputs)."""
    j = tl.arange(0, BLOCKS_PAD)[None, :]
    best = float("-inf")
    token = tl.zeros((), tl.int64)
    for peer in tl.static_range(WORLD):  # ranks hold ascending slices of the vocabulary
        v = tl.load(peer_pointer(value, peer, tl.float32) + rows[:, None] * BLOCKS + j,
                    mask=live[:, None] & (j < BLOCKS), other=float("-inf"))
        top = tl.max(v, axis=1)
        first = tl.min(tl.where(v == top[:, None], j, BLOCKS), axis=1)  # ties: the lowest token id, as torch.argmax
        candidate = tl.load(peer_pointer(index, peer, tl.int64) + rows * BLOCKS + first, mask=live, other=0)
        take = (top > best) | (peer == 0)
        token = tl.where(take, candidate, token)
        best = tl.where(take, top, best)
    return token


@triton.jit
def greedy_pick_tile(value, index, tokens, pos, B, BLOCKS: tl.constexpr, BLOCKS_PAD: tl.constexpr,
                     WORLD: tl.constexpr):
    for b in range(B):  # a row at a time: all rows at once doubled the batch-8 MegaKernel's spills (ptxas, sm_90a)
        row = b + tl.arange(0, 1)
        tl.store(tokens + row, best_of_blocks(value, index, row, row < B, BLOCKS, BLOCKS_PAD, WORLD))
        tl.store(pos + row, tl.load(pos + row) + 1)


def greedy_pick_reference(value, index, tokens, pos, B):
    for b in range(B):
        values, indices = torch.cat([v[b] for v in value]), torch.cat([i[b] for i in index])
        tokens[b] = indices[values.argmax()]
        pos[b] += 1


def _pick_plan(value, index, tokens, pos):
    """One tile for every row: it advances every row's position, so it waits for every reader of the positions
    in the step, and as one tile it waits for whole ops (a few counters), where a tile per row would poll each
    reader tile of its row (thousands at batch 8, measured 58 us at the end of a Qwen3-0.6B step on an H100)."""
    batch, blocks = value.shape
    if tokens.dim() != 1 or pos.dim() != 1 or tokens.shape[0] < batch or pos.shape[0] < batch:
        raise TaskDefinitionError(f"greedy_pick: tokens and pos must be [B] vectors with B >= {batch}")
    rows = ((0, batch),)
    return TilePlan(1, reads={"value": ((0, batch), ALL), "index": ((0, batch), ALL), "pos": rows},
                    writes={"tokens": rows, "pos": rows}, scalars={"B": batch},
                    constexprs={"BLOCKS": blocks, "BLOCKS_PAD": triton.next_power_of_2(blocks)}, cost=0.5)


embedding = register_task("embedding", embedding_tile, inputs=("tokens", "table"), outputs=("out",),
                          plan=_embedding_plan, reference=embedding_reference)
argmax_partial = register_task("argmax_partial", argmax_partial_tile, inputs=("logits",), outputs=("value", "index"),
                               plan=_argmax_plan, reference=argmax_partial_reference)
greedy_pick = register_task("greedy_pick", greedy_pick_tile, inputs=("value", "index"), outputs=("tokens", "pos"),
                            plan=_pick_plan, reference=greedy_pick_reference, peer_inputs=("value", "index"))
