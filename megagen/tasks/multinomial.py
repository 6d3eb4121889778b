"""Sampling inside the MegaKernel: the distribution HuggingFace's ``model.generate(do_sample=True)`` draws from.

HuggingFace warps a step's logits with temperature, then top-k, then top-p (TemperatureLogitsWarper,
TopKLogitsWarper and TopPLogitsWarper, in generate's order) and draws from the softmax of what they keep.
Here the draw is Gumbel-max over the kept tokens (``megagen.tasks.noise``), in two tasks that take greedy
decoding's places; they read the settings from device tensors, so one kernel serves every setting:

- ``sample_partial``, one tile per block of a row's vocabulary slice. With top-k (``top_k`` > 0) it writes the
  block's k best tokens as int64 keys (scaled logit, then token id: HuggingFace's order, a stable sort's), in
  id order, found by a search over their values (``kth_largest``: no sort); ``ties`` counts the tokens that
  share the k-th's value but did not fit. Without truncation (``top_k`` = 0) it writes the block's Gumbel-max,
  as argmax_partial writes its best.
- ``sample_pick``, one tile per row, reading every rank's blocks: the row's k-th best value among the
  candidates (every block holds its own k best, so the row's are among them), the tokens top-k keeps (every
  token at least that value, ties included), top-p over them (pairwise masses: ascending order, the most
  probable always kept), the Gumbel-max over what stays, and then the next token and the position advance.

A tile covers ``ROWS`` batch rows: one in a decode step, where rows go to different CTAs; many where one launch
draws thousands of times (the statistical tests).

The draw is HuggingFace's in every case. Where the tokens tied at the top-k value do not all fit the candidate
lists (a block left some out, or the row's candidates at that value outnumber ``C``), the pick reads them from
the logits instead (``_draw_at_level``), highest ids first: slower, and only for such ties. Where tokens tie
at the top-p boundary, HuggingFace's (unstable) sort decides which it keeps; here they are kept as a stable sort
keeps them, the highest ids. ``draw`` is the same sampler in plain torch, over whole rows of logits: the pick's
reference and the first token's sampler (drawn from the prefill's logits).
"""
import torch
import triton
import triton.language as tl

from megagen.errors import TaskDefinitionError
from megagen.tasks.base import ALL, TilePlan, cdiv, register_task, tile_arange
from megagen.tasks.comm import peer_pointer
from megagen.tasks.noise import gumbel, gumbel_torch
from megagen.tasks.sampling import best_of_blocks, padded

NO_TOKEN = tl.constexpr(-(2 ** 63))  # an empty candidate slot: every key is larger
NO_VALUE = tl.constexpr(-(2 ** 31))  # the order of padding: every value's is larger (-inf's is -2139095040)


@triton.jit
def _order(y):
    """int32 keys that order as the float32 values ``y`` do (-0.0 and 0.0 alike)."""
    bits = y.to(tl.int32, bitcast=True)
    return tl.where(bits < 0, -(bits & 0x7FFFFFFF), bits)


@triton.jit
def _value(order):
    """The float32 value of an order key (``_order``'s inverse)."""
    return tl.where(order < 0, NO_VALUE - order, order).to(tl.float32, bitcast=True)


@triton.jit
def _threshold(low, high, i, step):
    """The search's i-th threshold, as int32 (the bounds are int64: their range may exceed int32's)."""
    return tl.minimum(low + i * step, high + 1).to(tl.int32)


@triton.jit
def kth_largest(keys, k, low):
    """The k-th largest of each row of the int32 ``keys`` [R, N] (1 <= k <= N), as [R, 1], given ``low`` [R, 1], a
    value at most the answer (the row's minimum will do): a three-way search over the key range (at most 21
    passes), each pass one int32 sum counting the keys at or above two thresholds in 16-bit fields. A pass costs
    about one reduction's latency, less than sorting the keys would."""
    tl.static_assert(keys.shape[1] < 32768, "kth_largest counts in 16-bit fields: fewer than 32768 keys a row")
    low = low.to(tl.int64)  # invariants: at least k keys are >= low; the answer is <= high
    high = tl.max(keys, axis=1, keep_dims=True).to(tl.int64)
    while tl.max(high - low) > 0:  # a settled row stays settled: its step is 0
        step = (high - low + 2) // 3
        counts = tl.sum((keys >= _threshold(low, high, 1, step)).to(tl.int32)
                        + ((keys >= _threshold(low, high, 2, step)).to(tl.int32) << 16), axis=1, keep_dims=True)
        reached = ((counts & 0xFFFF) >= k).to(tl.int64) + ((counts >> 16) >= k).to(tl.int64)  # thresholds with k
        high = tl.where(reached < 2, low + (reached + 1) * step - 1, high)
        low = low + reached * step
    return low.to(tl.int32)


@triton.jit
def sample_partial_tile(logits, seed, temperature, top_k, pos, cand, ties, value, index, tile, B, offset, valid,
                        V: tl.constexpr, BLOCK: tl.constexpr, BLOCKS: tl.constexpr, C: tl.constexpr,
                        ROWS: tl.constexpr):
    j = tile % BLOCKS
    r = (tile // BLOCKS) * ROWS + tl.arange(0, ROWS)  # the tile's batch rows
    rows = r[:, None]
    cols = j * BLOCK + tl.arange(0, BLOCK)[None, :]
    real = (rows < B) & (cols < valid)
    y = tl.div_rn(tl.load(logits + rows * V + cols, mask=real, other=0.0).to(tl.float32), tl.load(temperature))
    token = offset + cols.to(tl.int64)
    out = r * BLOCKS + j  # the rows' entries of [B, BLOCKS] outputs
    k = tl.load(top_k)
    if k == 0:  # the whole vocabulary: the block's Gumbel-max
        position = tl.load(pos + rows, mask=rows < B, other=0)
        score = tl.where(real, y + gumbel(tl.load(seed), position, rows, token), float("-inf"))
        best, where = tl.max(score, axis=1, return_indices=True, return_indices_tie_break_left=True)
        tl.store(value + out, best, mask=r < B)
        tl.store(index + out, offset + j * BLOCK + where.to(tl.int64), mask=r < B)
    else:  # the block's n best keys (n = k, or all its tokens if fewer), in id order
        order = tl.where(real, _order(y), NO_VALUE)
        n = tl.minimum(k, tl.maximum(valid - j * BLOCK, 0)).to(tl.int32)
        # the n-th best value (nothing is taken when n = 0), searched from the least of C group maxima (groups of
        # every C-th token): C tokens are at least that, so it is at most the C-th best and the n-th
        floor = tl.min(tl.max(tl.reshape(order, (ROWS, BLOCK // C, C)), axis=1), axis=1, keep_dims=True)
        level = kth_largest(order, tl.maximum(n, 1), floor)
        above = (order > level).to(tl.int32)  # padding is below every level
        at = (real & (order == level)).to(tl.int32)
        both = at + (above << 16)  # two counts in 16-bit fields: one reduction and one scan
        counts = tl.sum(both, axis=1, keep_dims=True)
        before = tl.cumsum(both, axis=1)
        passed = (counts & 0xFFFF) - (n - (counts >> 16))  # tokens at the level that do not fit: the lowest ids
        take = (above == 1) | ((at == 1) & ((before & 0xFFFF) > passed))
        slot = (before >> 16) + tl.maximum((before & 0xFFFF) - passed, 0) - 1
        c = tl.arange(0, C)[None, :]
        tl.store(cand + out[:, None] * C + slot, (order.to(tl.int64) << 32) | token, mask=take)
        tl.store(cand + out[:, None] * C + c, NO_TOKEN, mask=(rows < B) & (c >= n))
        tl.store(ties + out, tl.reshape(passed, (ROWS,)).to(tl.int64), mask=r < B)


@triton.jit
def _rows_of_every_rank(table, rows, BLOCKS: tl.constexpr, BLOCKS_PAD: tl.constexpr, WIDTH: tl.constexpr,
                        WORLD: tl.constexpr):
    """Pointers to rows ``rows`` [R, 1] of every rank's [B, BLOCKS, WIDTH] int64 peer input, and their mask (ranks
    padded to a power of two): [R, RANKS * BLOCKS_PAD * WIDTH], ranks, then blocks, then entries."""
    RANKS: tl.constexpr = padded(WORLD)
    if WORLD == 1:
        k = tl.arange(0, BLOCKS_PAD * WIDTH)[None, :]
        return tl.load(table).to(tl.pointer_type(tl.int64)) + rows * (BLOCKS * WIDTH) + k, k < BLOCKS * WIDTH
    p = tl.arange(0, RANKS)[:, None, None]
    j = tl.arange(0, BLOCKS_PAD)[None, :, None]
    w = tl.arange(0, WIDTH)[None, None, :]
    base = tl.load(table + p, mask=p < WORLD, other=0).to(tl.pointer_type(tl.int64))
    offsets = tl.reshape((j * WIDTH + w) + p * 0, (1, RANKS * BLOCKS_PAD * WIDTH))
    bases = tl.reshape(base + (j * 0 + w * 0), (1, RANKS * BLOCKS_PAD * WIDTH))
    mask = tl.reshape((p < WORLD) & (j < BLOCKS) & (w < WIDTH), (1, RANKS * BLOCKS_PAD * WIDTH))
    return bases + rows * (BLOCKS * WIDTH) + offsets, mask


@triton.jit
def _logits_of(logits, peer, LOGITS: tl.constexpr):
    """Rank ``peer``'s logits, of dtype ``LOGITS`` (its name)."""
    if LOGITS == "bfloat16":
        return peer_pointer(logits, peer, tl.bfloat16)
    elif LOGITS == "float16":
        return peer_pointer(logits, peer, tl.float16)
    else:
        return peer_pointer(logits, peer, tl.float32)


@triton.jit
def _draw_at_level(logits, seed, temperature, level, count, rows, position, vocab, V: tl.constexpr,
                   BLOCK: tl.constexpr, LOGITS: tl.constexpr, WORLD: tl.constexpr):
    """For rows [R, 1], the Gumbel-max over the ``count`` highest-id tokens whose scaled logit is ``level`` (both
    [R, 1]), read from every rank's logits, highest ids first: (scores [R], tokens [R])."""
    CHUNKS: tl.constexpr = (V + BLOCK - 1) // BLOCK
    offs = tl.arange(0, BLOCK)[None, :]
    best = tl.full((rows.shape[0],), float("-inf"), tl.float32)
    token = tl.zeros((rows.shape[0],), tl.int64)
    passed = tl.zeros(rows.shape, tl.int64)  # tokens at the level with higher ids than the chunk's
    for q in tl.static_range(WORLD):
        peer = WORLD - 1 - q
        source = _logits_of(logits, peer, LOGITS)
        valid = tl.minimum(tl.maximum(vocab - peer * V, 0), V)
        for i in range(CHUNKS):
            cols = (CHUNKS - 1 - i) * BLOCK + offs
            real = (count > 0) & (cols < valid)
            y = tl.div_rn(tl.load(source + rows * V + cols, mask=real, other=0.0).to(tl.float32), temperature)
            at = real & (y == level)
            higher = passed + tl.sum(at.to(tl.int64), axis=1, keep_dims=True) - tl.cumsum(at.to(tl.int64), axis=1)
            ids = peer * V + cols.to(tl.int64)
            noise = tl.where(at & (higher < count), gumbel(seed, position, rows, ids), float("-inf"))
            top, where = tl.max(noise, axis=1, return_indices=True)
            token = tl.where(top > best, tl.sum(tl.where(offs == where[:, None], ids, 0), axis=1), token)
            best = tl.maximum(best, top)
            passed += tl.sum(at.to(tl.int64), axis=1, keep_dims=True)
    return tl.reshape(level, (rows.shape[0],)) + best, token


@triton.jit
def _draw_truncated(logits, cand, ties, seed, temperature, k, top_p, kept, rows, position, vocab, V: tl.constexpr,
                    BLOCK: tl.constexpr, BLOCKS: tl.constexpr, BLOCKS_PAD: tl.constexpr, C: tl.constexpr,
                    LOGITS: tl.constexpr, WORLD: tl.constexpr):
    """The draws of rows [R, 1] under top-k (and top-p), from every rank's candidate lists: tokens [R]."""
    where_cand, lists = _rows_of_every_rank(cand, rows, BLOCKS, BLOCKS_PAD, C, WORLD)
    keys = tl.load(where_cand, mask=lists & (rows >= 0), other=NO_TOKEN)  # [R, N]: in token id order
    order = (keys >> 32).to(tl.int32)  # NO_VALUE in empty slots
    level = kth_largest(order, k, tl.min(order, axis=1, keep_dims=True))  # top-k keeps every token at least this
    above = (order > level).to(tl.int32)
    at = (order == level).to(tl.int32)
    counts = tl.sum(at + (above << 16), axis=1, keep_dims=True)
    n_at, n_above = counts & 0xFFFF, counts >> 16
    # a block whose k best end at the level left out its other tokens there: they are kept too
    where_ties, blocks = _rows_of_every_rank(ties, rows, BLOCKS, BLOCKS_PAD, 1, WORLD)
    left_out = tl.load(where_ties, mask=blocks & (rows >= 0), other=0)  # [R, blocks]
    last = tl.min(tl.reshape(tl.where(keys != NO_TOKEN, order, -NO_VALUE - 1), (rows.shape[0], left_out.shape[1], C)),
                  axis=2)
    at_level = n_at + tl.sum(tl.where(last == level, left_out, 0), axis=1, keep_dims=True).to(tl.int32)
    fits = (at_level == n_at) & (n_above + at_level <= C)
    outside = tl.where(fits, 0, at_level)  # tokens at the level drawn from the logits instead
    # the kept candidates, compacted in id order into the rows' scratch
    inside = (above == 1) | ((at == 1) & fits)
    slot = tl.cumsum(inside.to(tl.int32), axis=1) - 1
    tl.store(kept + rows * C + slot, keys, mask=inside)
    tl.debug_barrier()
    c = tl.arange(0, C)[None, :]
    mine = tl.load(kept + rows * C + c, mask=c < n_above + tl.where(fits, n_at, 0), other=NO_TOKEN)
    mine_order = (mine >> 32).to(tl.int32)
    # probabilities relative to the most probable token's, over what top-k keeps (at least that token's own 1)
    top = _value(tl.maximum(tl.max(mine_order, axis=1, keep_dims=True), level))
    tie = tl.exp(_value(level) - top)
    total = (tl.sum(tl.where(mine_order > level, tl.exp(_value(mine_order) - top), 0.0), axis=1, keep_dims=True)
             + at_level.to(tl.float32) * tie)
    total = tl.maximum(total, 1.0)  # rows past the batch have nothing
    # HuggingFace's top-p: a token goes when the probability at or below it (ascending order) is at most
    # 1 - top_p; the most probable token always stays. The keys in ascending order (value, then id: a stable
    # sort's; empty slots first), so the mass at or below each is a running sum
    ascending = tl.sort(mine, dim=1)
    y = _value((ascending >> 32).to(tl.int32))
    token = ascending & 0xFFFFFFFF
    p = tl.where(ascending != NO_TOKEN, tl.exp(y - top) / total, 0.0)
    below = tl.cumsum(p, axis=1) + outside * tie / total
    limit = tl.where(top_p < 1.0, 1.0 - top_p, -1.0)
    keep = (ascending != NO_TOKEN) & ((below > limit) | (c == C - 1))  # the last key is the most probable
    score = tl.where(keep, y + gumbel(seed, position, rows, token), float("-inf"))
    best, where = tl.max(score, axis=1, return_indices=True)
    drawn = tl.sum(tl.where(c == where[:, None], token, 0), axis=1)
    if tl.max(outside) > 0:  # the j-th of them from the bottom has j * tie / total at or below it
        share = tie / total
        gone = tl.where(share > 0.0, tl.floor(limit / tl.maximum(share, 1e-38)), outside.to(tl.float32))
        stay = outside - tl.minimum(tl.maximum(gone, 0.0), outside.to(tl.float32)).to(tl.int32)
        stay = tl.where((n_above == 0) & (outside > 0), tl.maximum(stay, 1), stay)  # the highest ids stay
        level_best, level_token = _draw_at_level(logits, seed, temperature, _value(level), stay, rows, position,
                                                 vocab, V, BLOCK, LOGITS, WORLD)
        drawn = tl.where(level_best > best, level_token, drawn)
    return drawn


@triton.jit
def sample_pick_tile(logits, cand, ties, value, index, seed, temperature, top_k, top_p, kept, tokens, pos, tile, B,
                     vocab, V: tl.constexpr, BLOCK: tl.constexpr, BLOCKS: tl.constexpr, BLOCKS_PAD: tl.constexpr,
                     C: tl.constexpr, LOGITS: tl.constexpr, ROWS: tl.constexpr, WORLD: tl.constexpr):
    r = tile * ROWS + tl.arange(0, ROWS)  # the tile's batch rows
    live = r < B
    position = tl.load(pos + r, mask=live, other=0)
    k = tl.load(top_k)
    if k == 0:
        token = best_of_blocks(value, index, r, live, BLOCKS, BLOCKS_PAD, WORLD)
    else:
        token = _draw_truncated(logits, cand, ties, tl.load(seed), tl.load(temperature), k, tl.load(top_p), kept,
                                tl.where(live, r, -1)[:, None], position[:, None], vocab, V, BLOCK, BLOCKS,
                                BLOCKS_PAD, C, LOGITS, WORLD)
    tl.store(tokens + r, token, mask=live)
    tl.store(pos + r, position + 1, mask=live)


# -- the same in torch --------------------------------------------------------------------------------------

def _order_torch(y: torch.Tensor) -> torch.Tensor:
    bits = y.view(torch.int32).long()
    return torch.where(bits < 0, -(bits & 0x7FFFFFFF), bits)


def draw(logits: torch.Tensor, seed: int, position: torch.Tensor, row: torch.Tensor, temperature: float,
         top_k: int, top_p: float) -> torch.Tensor:
    """The tokens the sampling tasks draw for rows of whole-vocabulary ``logits`` [R, V] at ``position`` [R] of
    batch rows ``row`` [R]: HuggingFace's warpers (top-p's sort stable), then the Gumbel-max of what they keep.
    ``top_k``: 0 keeps every token; ``temperature``, ``top_p``: as the device tensors hold them (float32)."""
    y = logits.float() / torch.tensor([temperature], dtype=torch.float32, device=logits.device)
    keep = torch.ones_like(y, dtype=torch.bool)
    if top_k:
        keep = y >= y.topk(top_k, dim=-1).values[:, -1:]
    if top_p < 1.0:
        ascending, order = y.masked_fill(~keep, float("-inf")).sort(dim=-1, stable=True)
        drop = ascending.softmax(-1).cumsum(-1) <= 1 - top_p
        drop[:, -1] = False
        keep &= ~drop.scatter(1, order, drop)
    tokens = torch.arange(y.shape[1], device=y.device)
    noise = gumbel_torch(seed, position[:, None], row[:, None], tokens[None])
    return torch.where(keep, y + noise, float("-inf")).argmax(-1)


def sample_partial_reference(logits, seed, temperature, top_k, pos, cand, ties, value, index, tile, B, offset, valid,
                             BLOCK, BLOCKS, C, ROWS):
    group, j = divmod(tile, BLOCKS)
    cols = torch.arange(j * BLOCK, min((j + 1) * BLOCK, valid), device=logits.device)
    token = offset + cols
    k = int(top_k[0])
    for b in range(group * ROWS, min((group + 1) * ROWS, B)):
        y = logits[0, b, cols].float() / temperature
        if k == 0:
            score = y + gumbel_torch(int(seed[0]), pos[b], torch.tensor(b, device=pos.device), token)
            where = int(score.argmax()) if cols.numel() else 0  # the first maximum
            value[b, j] = score[where] if cols.numel() else float("-inf")
            index[b, j] = offset + j * BLOCK + where
            continue
        order = _order_torch(y)
        n = min(k, cols.numel())
        best = ((order << 32) | token).topk(n).values
        cand[b, j] = -(2 ** 63)
        cand[b, j, :n] = best[(best & 0xFFFFFFFF).argsort()]  # in id order, as the tile compacts them
        level = best[-1] >> 32 if n else None
        ties[b, j] = int((order == level).sum()) - int(((best >> 32) == level).sum()) if n else 0


def sample_pick_reference(logits, cand, ties, seed, temperature, top_k, top_p, kept, tokens, pos, tile, B, vocab, C,
                          ROWS):
    k = int(top_k[0])
    for b in range(tile * ROWS, min((tile + 1) * ROWS, B)):
        if k:  # the tile's scratch: the candidates top-k keeps, in id order, when they all fit
            keys = torch.cat([c[b].reshape(-1) for c in cand])
            last_keys = torch.cat([c[b] for c in cand])
            left_out = torch.cat([t[b] for t in ties])
            real = keys != -(2 ** 63)
            order = keys >> 32
            level = order[real].topk(k).values[-1]
            last = torch.where(last_keys != -(2 ** 63), last_keys >> 32, 2 ** 31).min(1).values
            at = real & (order == level)
            inside = real & (order > level)
            if int(left_out[last == level].sum()) == 0 and int(inside.sum() + at.sum()) <= C:
                inside |= at
            kept[b, :int(inside.sum())] = keys[inside]
        row = torch.cat([part[0, b] for part in logits])[:vocab]
        tokens[b] = draw(row[None], int(seed[0]), pos[b:b + 1], torch.tensor([b], device=row.device),
                         float(temperature[0]), k, float(top_p[0]))[0]
        pos[b] += 1


# -- plans ----------------------------------------------------------------------------------------------------

def sample_blocks(vocab: int, candidates: int, BLOCK: int = 4096) -> tuple[int, int]:
    """(block, blocks): how sample_partial splits a vocabulary slice; a block holds at least ``candidates``."""
    block = max(candidates, min(BLOCK, triton.next_power_of_2(vocab)))
    return block, cdiv(vocab, block)


def row_candidates(vocab: int, ranks: int, candidates: int) -> int:
    """The candidate slots sample_pick searches a row: every rank's blocks' lists, ranks and blocks padded to powers
    of two. kth_largest counts them in 16-bit fields, so there must be at most MAX_ROW_CANDIDATES."""
    _, blocks = sample_blocks(cdiv(vocab, ranks), candidates)
    return triton.next_power_of_2(ranks) * triton.next_power_of_2(blocks) * candidates


MAX_ROW_CANDIDATES = 32767


def _one(*tensors):
    for t in tensors:
        if t.numel() != 1:
            raise TaskDefinitionError(f"sampling settings must be one-element tensors, got shape {tuple(t.shape)}")
    return (ALL,)


def _sample_partial_plan(logits, seed, temperature, top_k, pos, cand, ties, value, index, offset=0, valid=None,
                         BLOCK=4096, ROWS=1):
    if logits.dim() != 3 or logits.shape[0] != 1 or not logits.is_contiguous():
        raise TaskDefinitionError(f"sample_partial: logits must be a contiguous [1, B, V] tensor, "
                                  f"got {tuple(logits.shape)}")
    _, batch, vocab = logits.shape
    candidates = cand.shape[-1]
    if candidates & (candidates - 1) or ROWS & (ROWS - 1):
        raise TaskDefinitionError(f"sample_partial: the candidates per block (cand's last dimension, {candidates}) "
                                  f"and ROWS ({ROWS}) must be powers of two")
    BLOCK, blocks = sample_blocks(vocab, candidates, BLOCK)
    if tuple(cand.shape) != (batch, blocks, candidates) or any(tuple(t.shape) != (batch, blocks)
                                                               for t in (ties, value, index)):
        raise TaskDefinitionError(f"sample_partial: cand must be [B, blocks, C] = {(batch, blocks, candidates)} and "
                                  f"ties, value, index [B, blocks] = {(batch, blocks)}")
    valid = vocab if valid is None else valid
    if not 0 <= valid <= vocab:
        raise TaskDefinitionError(f"sample_partial: valid must be in 0..{vocab} (the logits' width), got {valid}")
    t = tile_arange(cdiv(batch, ROWS) * blocks)
    rows, j = (t // blocks * ROWS, ROWS), (t % blocks, 1)
    return TilePlan(t.size, reads={"logits": ((0, 1), rows, (j[0] * BLOCK, BLOCK)), "seed": _one(seed),
                                   "temperature": _one(temperature), "top_k": _one(top_k), "pos": (rows,)},
                    writes={"cand": (rows, j, ALL), "ties": (rows, j), "value": (rows, j), "index": (rows, j)},
                    scalars={"B": batch, "offset": int(offset), "valid": int(valid)},
                    constexprs={"V": vocab, "BLOCK": BLOCK, "BLOCKS": blocks, "C": candidates, "ROWS": ROWS}, cost=1.0)


def _sample_pick_plan(logits, cand, ties, value, index, seed, temperature, top_k, top_p, kept, tokens, pos,
                      vocab=None, ROWS=1):
    batch, blocks, candidates = cand.shape
    width = logits.shape[2]
    if (tuple(kept.shape) != (batch, candidates) or tokens.dim() != 1 or pos.dim() != 1 or tokens.shape[0] < batch
            or pos.shape[0] < batch):
        raise TaskDefinitionError(f"sample_pick: kept must be [B, C] = {(batch, candidates)} and tokens, pos [B] "
                                  f"vectors with B >= {batch}")
    t = tile_arange(cdiv(batch, ROWS))
    rows = ((t * ROWS, ROWS),)
    settings = {"seed": _one(seed), "temperature": _one(temperature), "top_k": _one(top_k), "top_p": _one(top_p)}
    return TilePlan(t.size, reads={"logits": ((0, 1),) + rows + (ALL,), "cand": rows + (ALL, ALL),
                                   "ties": rows + (ALL,), "value": rows + (ALL,), "index": rows + (ALL,), "pos": rows,
                                   **settings},
                    writes={"kept": rows + (ALL,), "tokens": rows, "pos": rows},
                    scalars={"B": batch, "vocab": width if vocab is None else int(vocab)},
                    constexprs={"V": width, "BLOCK": sample_blocks(width, candidates)[0], "BLOCKS": blocks,
                                "BLOCKS_PAD": triton.next_power_of_2(blocks), "C": candidates,
                                "LOGITS": str(logits.dtype).removeprefix("torch."), "ROWS": ROWS}, cost=2.0)


sample_partial = register_task("sample_partial", sample_partial_tile,
                               inputs=("logits", "seed", "temperature", "top_k", "pos"),
                               outputs=("cand", "ties", "value", "index"), plan=_sample_partial_plan,
                               reference=sample_partial_reference)
sample_pick = register_task("sample_pick", sample_pick_tile,
                            inputs=("logits", "cand", "ties", "value", "index", "seed", "temperature", "top_k",
                                    "top_p"),
                            outputs=("kept", "tokens", "pos"), plan=_sample_pick_plan, reference=sample_pick_reference,
                            peer_inputs=("logits", "cand", "ties", "value", "index"))
