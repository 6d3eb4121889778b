"""Sampling inside the MegaKernel: the distribution HuggingFace's ``model.generate(do_sample=True)`` draws from.

HuggingFace warps a step's logits with temperature, then top-k, then top-p (TemperatureLogitsWarper,
TopKLogitsWarper and TopPLogitsWarper, in generate's order) and draws from the softmax of what they keep.
Here the draw is Gumbel-max over the kept tokens (``megagen.tasks.noise``), in two tasks that take greedy
decoding's places; they read the settings from device tensors, so one kernel serves every setting:

- ``sample_partial``, one tile per block of a row's vocabulary slice (at batch 1 an lm_head tile's rows, so it
  waits for that one tile, on the CTA that ran it). With top-k (``top_k`` > 0) it writes the block's C best
  tokens as int64 keys (scaled logit, then token id: HuggingFace's order, a stable sort's), in descending order
  (a bitonic network). Without truncation (``top_k`` = 0) it writes the block's Gumbel-max, as
  argmax_partial writes its best.
- ``sample_pick``, one tile for the rows, reading every rank's lists: the row's C best keys, merged from the
  lists' heads and then, a round at a time, from the next entries of the lists whose last entry read is still
  of the k-th best value or above (one or two rounds for most logits, so a pick reads a few hundred keys, not every
  list); top-k keeps every token of at least the k-th value (ties included), top-p the most probable of those
  (a running sum in ascending order, the most probable always kept), and the Gumbel-max over what stays gives
  the next token; then the position advances.

A tile covers ``ROWS`` batch rows: one in a decode step's sample_partial, the batch in its pick, many where one
launch draws thousands of times (the statistical tests).

The draw is HuggingFace's in every case. Where the C-th best key is at the top-k value, tokens tied there may
lie past every list: the pick counts and draws them from the logits instead (``_count_at_level``,
``_draw_at_level``), highest ids first: slower, and only for so many ties. Where tokens tie at the top-p boundary,
HuggingFace's (unstable) sort decides which it keeps; here they are kept as a stable sort keeps them, the highest
ids. ``draw`` is the same sampler in plain torch, over whole rows of logits: the pick's reference and the first
token's sampler (drawn from the prefill's logits).
"""
import torch
import triton
import triton.language as tl

from megagen.errors import TaskDefinitionError
from megagen.tasks.base import ALL, TilePlan, cdiv, register_task, tile_arange
from megagen.tasks.comm import peer_pointer
from megagen.tasks.noise import gumbel, gumbel_torch
from megagen.tasks.sampling import MAX_ARGMAX_ROWS, best_of_blocks

NO_TOKEN = tl.constexpr(-(2 ** 63))  # an empty list entry: every key is larger
NO_VALUE = tl.constexpr(-(2 ** 31))  # the order of an empty entry: every value's is larger (-inf's is -2139095040)
MAX_TOP_K = 256  # list entries a block keeps (max_top_k): a pick holds a row's list, C keys, in its registers


@triton.jit
def _order(y):
    """int32 keys that order as the float32 values ``y`` do (-0.0 and 0.0 alike)."""
    bits = y.to(tl.int32, bitcast=True)
    return tl.where(bits < 0, -(bits & 0x7FFFFFFF), bits)


@triton.jit
def _value(order):
    """The float32 value of an order key (``_order``'s inverse)."""
    return tl.where(order < 0, NO_VALUE - order, order).to(tl.float32, bitcast=True)


@triton.constexpr_function
def _log2(n):
    return n.bit_length() - 1


@triton.jit
def _exchange(h, p, BIT: tl.constexpr, desc, BITS: tl.constexpr):
    """One layer of a bitonic network on int64 keys ``h`` [R, 2, ..., 2] (an axis for each of the BITS bits of a
    key's index ``p`` in its row, the highest first): each key and the one whose index differs in bit BIT in
    order, the larger first where ``desc`` holds, the smaller first elsewhere. The partner is the pair's sum less
    the key (exact in wrapping arithmetic): a plain sum, which Triton's interpreter runs as fast as the GPU does,
    where an xor-sum reduction runs key by key."""
    partner = tl.sum(h, axis=BITS - BIT, keep_dims=True) - h
    second = ((p >> BIT) & 1) == 1
    return tl.where(second == desc, tl.minimum(h, partner), tl.maximum(h, partner))


@triton.jit
def _bitonic_merge(h, p, RUN: tl.constexpr, DESCENDING: tl.constexpr, BITS: tl.constexpr):
    """Sort each run of RUN keys of ``h`` (as _exchange holds them; each run a bitonic sequence): run r descending
    where DESCENDING holds for even r, ascending for odd r, and the reverse where it does not."""
    desc = ((p // RUN) % 2 == 0) == DESCENDING
    for i in tl.static_range(_log2(RUN)):
        h = _exchange(h, p, _log2(RUN) - 1 - i, desc, BITS)
    return h


@triton.jit
def _hypercube(x, BITS: tl.constexpr):
    """[R, 2**BITS] keys as _exchange holds them, and their indices."""
    return tl.reshape(x, [x.shape[0]] + [2] * BITS), tl.reshape(tl.arange(0, 1 << BITS), [1] + [2] * BITS)


@triton.jit
def _top(keys, C: tl.constexpr, DESCENDING: tl.constexpr):
    """The C largest of each row of int64 ``keys`` [R, N] (N >= C, powers of two), sorted: runs of C sorted by a
    bitonic network in alternating directions, then halved (the larger of two opposite runs, key by key, is a
    bitonic run holding their C largest) and merged again, until one run is left. The keys stay in one shape
    throughout (an axis a bit of their index), so every layer is a register or shuffle exchange."""
    BITS: tl.constexpr = _log2(keys.shape[1])
    h, p = _hypercube(keys, BITS)
    for i in tl.static_range(1, _log2(C) + 1):
        h = _bitonic_merge(h, p, 1 << i, DESCENDING, BITS)
    for t in tl.static_range(BITS - _log2(C)):
        h = tl.max(h, axis=BITS - t - _log2(C))  # the axis of index bit log2(C)
        p = tl.reshape(tl.arange(0, 1 << (BITS - t - 1)), [1] + [2] * (BITS - t - 1))
        h = _bitonic_merge(h, p, C, DESCENDING, BITS - t - 1)
    return tl.reshape(h, (keys.shape[0], C))


@triton.jit
def _merge(best, keys, C: tl.constexpr):
    """The C largest of the descending [R, C] ``best`` and of [R, N] ``keys`` (N >= C), in descending order."""
    h, p = _hypercube(tl.maximum(best, _top(keys, C, False)), _log2(C))
    return tl.reshape(_bitonic_merge(h, p, C, True, _log2(C)), (best.shape[0], C))


@triton.jit
def _kth(best, k, C: tl.constexpr):
    """The k-th key of each row of the descending [R, C] ``best``, as [R, 1]."""
    return tl.sum(tl.where(tl.arange(0, C)[None, :] == k - 1, best, 0), axis=1, keep_dims=True)


@triton.jit
def _least_of_kth_value(best, k, C: tl.constexpr):
    """The least key of the k-th key's value (its id bits cleared), as [R, 1]: tokens tied there with lower ids
    are kept by top-k too, so lists are read on while they hold such keys."""
    return (_kth(best, k, C) >> 32) << 32


@triton.jit(noinline=True)  # as the pick (below): no spills in the MegaKernel with both
def sample_partial_tile(logits, seed, temperature, top_k, pos, cand, value, index, tile, B, offset, valid,
                        V: tl.constexpr, BLOCK: tl.constexpr, BLOCKS: tl.constexpr, WIDTH: tl.constexpr,
                        C: tl.constexpr, ROWS: tl.constexpr):
    j = tile % BLOCKS
    r = (tile // BLOCKS) * ROWS + tl.arange(0, ROWS)  # the tile's batch rows
    rows = r[:, None]
    cols = j * BLOCK + tl.arange(0, WIDTH)[None, :]
    real = (rows < B) & (cols < tl.minimum(valid, (j + 1) * BLOCK))
    y = tl.div_rn(tl.load(logits + rows * V + cols, mask=real, other=0.0).to(tl.float32), tl.load(temperature))
    token = offset + cols.to(tl.int64)
    out = r * BLOCKS + j  # the rows' entries of [B, BLOCKS] outputs
    if tl.load(top_k) == 0:  # the whole vocabulary: the block's Gumbel-max
        position = tl.load(pos + rows, mask=rows < B, other=0)
        score = tl.where(real, y + gumbel(tl.load(seed), position, rows, token), float("-inf"))
        best, where = tl.max(score, axis=1, return_indices=True, return_indices_tie_break_left=True)
        tl.store(value + out, best, mask=r < B)
        tl.store(index + out, offset + j * BLOCK + where.to(tl.int64), mask=r < B)
    else:  # the block's C best keys (scaled logit, then token id), in descending order
        keys = tl.where(real, (_order(y).to(tl.int64) << 32) | token, NO_TOKEN)
        tl.store(cand + out[:, None] * C + tl.arange(0, C)[None, :], _top(keys, C, True), mask=rows < B)


@triton.jit
def _entries(cand, peer, rows, entry, running, BLOCKS: tl.constexpr, HEADS: tl.constexpr, C: tl.constexpr,
             DEPTH: tl.constexpr):
    """Entries ``entry`` to ``entry + DEPTH - 1`` of rank ``peer``'s lists for rows [R, 1], of the lists where
    ``running`` ([R, HEADS]) holds: [R, HEADS * DEPTH] keys."""
    j = tl.arange(0, HEADS)[None, :, None]
    d = entry + tl.arange(0, DEPTH)[None, None, :]
    where = tl.expand_dims(rows, 2)
    keys = tl.load(peer_pointer(cand, peer, tl.int64) + (where * BLOCKS + j) * C + d,
                   mask=tl.expand_dims(running, 2) & (where >= 0) & (j < BLOCKS) & (d < C), other=NO_TOKEN)
    return tl.reshape(keys, (rows.shape[0], HEADS * DEPTH))


@triton.jit
def _best_keys(cand, rows, k, BLOCKS: tl.constexpr, HEADS: tl.constexpr, C: tl.constexpr, DEPTH: tl.constexpr,
               WORLD: tl.constexpr):
    """The C largest keys of rows [R, 1] over every rank's lists, in descending order, or at least every key of
    the k-th best value and above (top-k keeps them all, ties included). A list is read DEPTH entries a round,
    the next round only while its last entry read is of at least the k-th best value so far (one or two rounds
    for most logits, where reading every list whole would take C entries of each)."""
    best = tl.full((rows.shape[0], C), NO_TOKEN, tl.int64)
    lists = tl.full((rows.shape[0], HEADS), 1, tl.int1)
    entry = tl.full((), 0, tl.int32)
    deeper = entry < C
    while deeper:
        level = _least_of_kth_value(best, k, C)  # no key yet in the first round: every list runs
        for peer in tl.static_range(WORLD):
            running = _entries(cand, peer, rows, entry - 1, lists & (entry > 0), BLOCKS, HEADS, C, 1) >= level
            best = _merge(best, _entries(cand, peer, rows, entry, running, BLOCKS, HEADS, C, DEPTH), C)
        entry += DEPTH
        deeper = entry < C
        if deeper:  # is the last entry read of any list still of the k-th value or above?
            level = _least_of_kth_value(best, k, C)
            ranks = tl.zeros((), tl.int32)
            for peer in tl.static_range(WORLD):
                last = _entries(cand, peer, rows, entry - 1, lists, BLOCKS, HEADS, C, 1)
                ranks += tl.sum(((last >= level) & (last != NO_TOKEN)).to(tl.int32))
            deeper = ranks > 0
    return best


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
def _count_at_level(logits, temperature, level, rows, vocab, V: tl.constexpr, BLOCK: tl.constexpr,
                    LOGITS: tl.constexpr, WORLD: tl.constexpr):
    """For rows [R, 1], the tokens whose scaled logit is ``level`` ([R, 1]) over every rank's logits: [R, 1]."""
    CHUNKS: tl.constexpr = (V + BLOCK - 1) // BLOCK
    count = tl.zeros(rows.shape, tl.int32)
    for peer in tl.static_range(WORLD):
        source = _logits_of(logits, peer, LOGITS)
        valid = tl.minimum(tl.maximum(vocab - peer * V, 0), V)
        for i in range(CHUNKS):
            cols = i * BLOCK + tl.arange(0, BLOCK)[None, :]
            real = (rows >= 0) & (cols < valid)
            y = tl.div_rn(tl.load(source + rows * V + cols, mask=real, other=0.0).to(tl.float32), temperature)
            count += tl.sum((real & (y == level)).to(tl.int32), axis=1, keep_dims=True)
    return count


@triton.jit
def _draw_at_level(logits, seed, temperature, level, count, rows, position, vocab, V: tl.constexpr,
                   BLOCK: tl.constexpr, LOGITS: tl.constexpr, WORLD: tl.constexpr):
    """For rows [R, 1], the Gumbel-max over the ``count`` highest-id tokens whose scaled logit is ``level`` (both
    [R, 1]), read from every rank's logits, highest ids first: (scores [R], tokens [R])."""
    CHUNKS: tl.constexpr = (V + BLOCK - 1) // BLOCK
    offs = tl.arange(0, BLOCK)[None, :]
    best = tl.full((rows.shape[0],), float("-inf"), tl.float32)
    token = tl.zeros((rows.shape[0],), tl.int64)
    passed = tl.zeros(rows.shape, tl.int32)  # tokens at the level with higher ids than the chunk's
    for q in tl.static_range(WORLD):
        peer = WORLD - 1 - q
        source = _logits_of(logits, peer, LOGITS)
        valid = tl.minimum(tl.maximum(vocab - peer * V, 0), V)
        for i in range(CHUNKS):
            cols = (CHUNKS - 1 - i) * BLOCK + offs
            real = (count > 0) & (cols < valid)
            y = tl.div_rn(tl.load(source + rows * V + cols, mask=real, other=0.0).to(tl.float32), temperature)
            at = (real & (y == level)).to(tl.int32)
            higher = passed + tl.sum(at, axis=1, keep_dims=True) - tl.cumsum(at, axis=1)
            ids = peer * V + cols.to(tl.int64)
            noise = tl.where((at == 1) & (higher < count), gumbel(seed, position, rows, ids), float("-inf"))
            top, where = tl.max(noise, axis=1, return_indices=True)
            token = tl.where(top > best, tl.sum(tl.where(offs == where[:, None], ids, 0), axis=1), token)
            best = tl.maximum(best, top)
            passed += tl.sum(at, axis=1, keep_dims=True)
    return tl.reshape(level, (rows.shape[0],)) + best, token


@triton.jit
def _draw_truncated(logits, cand, seed, temperature, k, top_p, rows, position, vocab, V: tl.constexpr,
                    BLOCK: tl.constexpr, BLOCKS: tl.constexpr, HEADS: tl.constexpr, C: tl.constexpr,
                    DEPTH: tl.constexpr, LOGITS: tl.constexpr, WORLD: tl.constexpr):
    """The draws of rows [R, 1] under top-k (and top-p), from every rank's lists: tokens [R]."""
    best = _best_keys(cand, rows, k, BLOCKS, HEADS, C, DEPTH, WORLD)
    c = tl.arange(0, C)[None, :]
    order = (best >> 32).to(tl.int32)
    level = (_kth(best, k, C) >> 32).to(tl.int32)  # top-k keeps every token of at least this value
    real = best != NO_TOKEN
    above = real & (order > level)
    at = real & (order == level)
    n_above = tl.sum(above.to(tl.int32), axis=1, keep_dims=True)
    # where the C-th key is at the level, tokens there may lie past every list: they are counted and drawn from
    # the logits instead (slower, and only for so many ties)
    last = tl.sum(tl.where(c == C - 1, best, 0), axis=1, keep_dims=True)
    fits = (last == NO_TOKEN) | ((last >> 32).to(tl.int32) != level)
    at_level = tl.sum(at.to(tl.int32), axis=1, keep_dims=True)
    if tl.min(fits.to(tl.int32)) == 0:
        counted = _count_at_level(logits, temperature, _value(level), rows, vocab, V, BLOCK, LOGITS, WORLD)
        at_level = tl.where(fits, at_level, counted)
    outside = tl.where(fits, 0, at_level)  # tokens at the level drawn from the logits
    mine = tl.where(above | (at & fits), best, NO_TOKEN)  # descending: the kept keys, then empty entries
    # probabilities relative to the most probable token's, over what top-k keeps (at least that token's own 1)
    top = _value(tl.maximum(tl.max((mine >> 32).to(tl.int32), axis=1, keep_dims=True), level))
    tie = tl.exp(_value(level) - top)
    total = (tl.sum(tl.where(above, tl.exp(_value(order) - top), 0.0), axis=1, keep_dims=True)
             + at_level.to(tl.float32) * tie)
    total = tl.maximum(total, 1.0)  # rows past the batch have nothing
    # HuggingFace's top-p: a token goes when the probability at or below it (ascending order) is at most
    # 1 - top_p; the most probable token always stays. The kept keys are in descending order (value, then id: a
    # stable sort's reversed), so the mass at or below each is a running sum from the end
    y = _value((mine >> 32).to(tl.int32))
    token = mine & 0xFFFFFFFF
    p = tl.where(mine != NO_TOKEN, tl.exp(y - top) / total, 0.0)
    below = tl.cumsum(p, axis=1, reverse=True) + outside * tie / total
    limit = tl.where(top_p < 1.0, 1.0 - top_p, -1.0)
    keep = (mine != NO_TOKEN) & ((below > limit) | (c == 0))  # the first key is the most probable
    score = tl.where(keep, y + gumbel(seed, position, rows, token), float("-inf"))
    best_score, where = tl.max(score, axis=1, return_indices=True)
    drawn = tl.sum(tl.where(c == where[:, None], token, 0), axis=1)
    if tl.max(outside) > 0:  # the j-th of them from the bottom has j * tie / total at or below it
        share = tie / total
        gone = tl.where(share > 0.0, tl.floor(limit / tl.maximum(share, 1e-38)), outside.to(tl.float32))
        stay = outside - tl.minimum(tl.maximum(gone, 0.0), outside.to(tl.float32)).to(tl.int32)
        stay = tl.where((n_above == 0) & (outside > 0), tl.maximum(stay, 1), stay)  # the highest ids stay
        level_best, level_token = _draw_at_level(logits, seed, temperature, _value(level), stay, rows, position,
                                                 vocab, V, BLOCK, LOGITS, WORLD)
        drawn = tl.where(level_best > best_score, level_token, drawn)
    return drawn


@triton.jit(noinline=True)  # a function of its own: its registers do not weigh on the GEMV tiles' (ptxas)
def sample_pick_tile(logits, cand, value, index, seed, temperature, top_k, top_p, tokens, pos, tile, B, vocab,
                     V: tl.constexpr, BLOCK: tl.constexpr, BLOCKS: tl.constexpr, HEADS: tl.constexpr,
                     C: tl.constexpr, DEPTH: tl.constexpr, LOGITS: tl.constexpr, ROWS: tl.constexpr,
                     WORLD: tl.constexpr):
    r = tile * ROWS + tl.arange(0, ROWS)  # the tile's batch rows
    live = r < B
    position = tl.load(pos + r, mask=live, other=0)
    k = tl.load(top_k)
    if k == 0:
        token = best_of_blocks(value, index, r, live, BLOCKS, HEADS, WORLD)
    else:
        token = _draw_truncated(logits, cand, tl.load(seed), tl.load(temperature), k, tl.load(top_p),
                                tl.where(live, r, -1)[:, None], position[:, None], vocab, V, BLOCK, BLOCKS, HEADS,
                                C, DEPTH, LOGITS, WORLD)
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


def sample_partial_reference(logits, seed, temperature, top_k, pos, cand, value, index, tile, B, offset, valid,
                             BLOCK, BLOCKS, C, ROWS):
    group, j = divmod(tile, BLOCKS)
    cols = torch.arange(j * BLOCK, min((j + 1) * BLOCK, valid), device=logits.device)
    token = offset + cols
    for b in range(group * ROWS, min((group + 1) * ROWS, B)):
        y = logits[0, b, cols].float() / temperature
        if int(top_k[0]) == 0:
            score = y + gumbel_torch(int(seed[0]), pos[b], torch.tensor(b, device=pos.device), token)
            where = int(score.argmax()) if cols.numel() else 0  # the first maximum
            value[b, j] = score[where] if cols.numel() else float("-inf")
            index[b, j] = offset + j * BLOCK + where
            continue
        best = ((_order_torch(y) << 32) | token).sort(descending=True).values[:C]
        cand[b, j] = -(2 ** 63)
        cand[b, j, :best.numel()] = best


def sample_pick_reference(logits, cand, value, index, seed, temperature, top_k, top_p, tokens, pos, tile, B, vocab,
                          ROWS):
    for b in range(tile * ROWS, min((tile + 1) * ROWS, B)):
        row = torch.cat([part[0, b] for part in logits])[:vocab]
        tokens[b] = draw(row[None], int(seed[0]), pos[b:b + 1], torch.tensor([b], device=row.device),
                         float(temperature[0]), int(top_k[0]), float(top_p[0]))[0]
        pos[b] += 1


# -- plans ----------------------------------------------------------------------------------------------------

def _one(*tensors):
    for t in tensors:
        if t.numel() != 1:
            raise TaskDefinitionError(f"sampling settings must be one-element tensors, got shape {tuple(t.shape)}")
    return (ALL,)


def _width(n: int, candidates: int) -> int:
    """A tile's keys of n tokens or lists, as _top takes them: a power of two, at least the list length."""
    return max(triton.next_power_of_2(n), candidates)


def _sample_partial_plan(logits, seed, temperature, top_k, pos, cand, value, index, offset=0, valid=None,
                         BLOCK=4096, ROWS=1):
    """Tiles of BLOCK logits (the decode graph gives each lm_head tile's rows a block, as greedy's argmax); cand
    is [B, blocks, C]: each block's C best keys, value and index [B, blocks]: its Gumbel-max without top-k."""
    if logits.dim() != 3 or logits.shape[0] != 1 or not logits.is_contiguous():
        raise TaskDefinitionError(f"sample_partial: logits must be a contiguous [1, B, V] tensor, "
                                  f"got {tuple(logits.shape)}")
    _, batch, vocab = logits.shape
    candidates = cand.shape[-1]
    if candidates & (candidates - 1) or ROWS & (ROWS - 1) or not 1 <= candidates <= MAX_TOP_K:
        raise TaskDefinitionError(f"sample_partial: the entries a list (cand's last dimension, {candidates}) must "
                                  f"be a power of two up to {MAX_TOP_K}, and ROWS ({ROWS}) a power of two")
    if not isinstance(BLOCK, int) or not 1 <= BLOCK <= MAX_ARGMAX_ROWS:
        raise TaskDefinitionError(f"sample_partial: BLOCK (logits a tile) must be an int in 1..{MAX_ARGMAX_ROWS}, "
                                  f"got {BLOCK!r}")
    blocks = cdiv(vocab, BLOCK)
    if tuple(cand.shape) != (batch, blocks, candidates) or any(tuple(t.shape) != (batch, blocks)
                                                               for t in (value, index)):
        raise TaskDefinitionError(f"sample_partial: cand must be [B, blocks, C] = {(batch, blocks, candidates)} and "
                                  f"value, index [B, blocks] = {(batch, blocks)}")
    valid = vocab if valid is None else valid
    if not 0 <= valid <= vocab:
        raise TaskDefinitionError(f"sample_partial: valid must be in 0..{vocab} (the logits' width), got {valid}")
    t = tile_arange(cdiv(batch, ROWS) * blocks)
    rows, j = (t // blocks * ROWS, ROWS), (t % blocks, 1)
    return TilePlan(t.size, reads={"logits": ((0, 1), rows, (j[0] * BLOCK, BLOCK)), "seed": _one(seed),
                                   "temperature": _one(temperature), "top_k": _one(top_k), "pos": (rows,)},
                    writes={"cand": (rows, j, ALL), "value": (rows, j), "index": (rows, j)},
                    scalars={"B": batch, "offset": int(offset), "valid": int(valid)},
                    constexprs={"V": vocab, "BLOCK": BLOCK, "BLOCKS": blocks, "C": candidates, "ROWS": ROWS,
                                "WIDTH": _width(min(BLOCK, vocab), candidates)}, cost=1.0)


def _sample_pick_plan(logits, cand, value, index, seed, temperature, top_k, top_p, tokens, pos, vocab=None, ROWS=1):
    """One tile for ROWS rows; a round of its merge reads DEPTH entries of each of a rank's lists (HEADS: the
    lists, padded), about PICK_KEYS keys and at least C (as _top takes them): the heads alone at batch 1 (a list
    per lm_head tile), more entries where there are few lists."""
    batch, blocks, candidates = cand.shape
    heads = triton.next_power_of_2(blocks)
    width = logits.shape[2]
    if tokens.dim() != 1 or pos.dim() != 1 or tokens.shape[0] < batch or pos.shape[0] < batch:
        raise TaskDefinitionError(f"sample_pick: tokens and pos must be [B] vectors with B >= {batch}")
    t = tile_arange(cdiv(batch, ROWS))
    rows = ((t * ROWS, ROWS),)
    settings = {"seed": _one(seed), "temperature": _one(temperature), "top_k": _one(top_k), "top_p": _one(top_p)}
    return TilePlan(t.size, reads={"logits": ((0, 1),) + rows + (ALL,), "cand": rows + (ALL, ALL),
                                   "value": rows + (ALL,), "index": rows + (ALL,), "pos": rows, **settings},
                    writes={"tokens": rows, "pos": rows},
                    scalars={"B": batch, "vocab": width if vocab is None else int(vocab)},
                    constexprs={"V": width, "BLOCK": min(SCAN_BLOCK, triton.next_power_of_2(width)), "BLOCKS": blocks,
                                "HEADS": heads, "C": candidates,
                                "DEPTH": max(candidates // heads, min(candidates, PICK_KEYS // heads), 1),
                                "LOGITS": str(logits.dtype).removeprefix("torch."), "ROWS": ROWS}, cost=2.0)


SCAN_BLOCK = 512  # logits a step of the pick's scan for ties past every list
PICK_KEYS = 512  # keys a round of the pick's merge reads from a rank's lists


sample_partial = register_task("sample_partial", sample_partial_tile,
                               inputs=("logits", "seed", "temperature", "top_k", "pos"),
                               outputs=("cand", "value", "index"), plan=_sample_partial_plan,
                               reference=sample_partial_reference)
sample_pick = register_task("sample_pick", sample_pick_tile,
                            inputs=("logits", "cand", "value", "index", "seed", "temperature", "top_k", "top_p"),
                            outputs=("tokens", "pos"), plan=_sample_pick_plan, reference=sample_pick_reference,
                            peer_inputs=("logits", "cand", "value", "index"))
