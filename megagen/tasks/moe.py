"""Mixture-of-experts tasks: the routing decided on the device, and GEMVs over the experts it picks.

A sparse MLP block is four phases of the decode graph (``megagen.decode``):

1. the router: ``rmsnorm_gemv`` (``megagen.tasks.linear``) of the residual stream by the router weight
   [E, hidden], the post-attention RMSNorm fused in as for every projection;
2. ``route``: per batch row, the softmax of the router logits in fp32, its top k, renormalised where the
   family says: expert ids [B, TOPK] (int64) and routing weights [B, TOPK], stored in the dtype HuggingFace
   casts them to (the model's for Qwen3-MoE, fp32 for Mixtral);
3. ``expert_rmsnorm_gemv`` (gate and up) and ``expert_silu_mul_gemv`` (down): linear.py's tile over one
   routed slot (a batch row's k-th expert), which reads its expert id from ``ids`` after its wait and
   offsets the stacked weights [E, rows, K] to that expert. The tiles are slots, not experts, so the graph's
   dependencies are static whatever the routing, and only the routed experts' weights are read;
4. ``moe_combine``: the residual stream plus every slot's down output scaled by its routing weight, each
   rounded where HuggingFace rounds (the expert's output and its scaled output, to the model dtype), summed in
   fp32 like the rest of the residual stream.

At batch > 1 the slots are the union of the rows' experts instead (``expert_union``, a phase between 2 and 3): each
expert the step routes to has one slot, whose gate / up and down tiles multiply every batch row by its weights (a
batch GEMV), and ``moe_combine_union`` finds each row's picks through their slots. An expert two rows share is
streamed once; the tiles of the slots past the union (the picks that repeated an expert) stream nothing.

Early routing (``Tiling.early_routing``, one rank) takes phases 1 and 2 off the path after the o projection: the
router's logits are the norm's factor (one positive number a row) times logits that two GEMVs give before o is done
(``megagen.trace.Layer.early_router``), one of the stream before o and ``router_route`` over the attention's output,
whose last tile to finish picks the experts from them (the factor changes no order); ``routing_weights`` takes
the factor from the stream after o and computes the routing weights as ``route`` would, beside the experts' gate /
up.
"""
import numpy as np
import torch
import triton
import triton.language as tl

from megagen.errors import TaskDefinitionError
from megagen.scoreboard.device import take_ticket
from megagen.tasks.base import ALL, TilePlan, cdiv, register_task, tile_arange
from megagen.tasks.linear import check_pairs_aligned, gemv_prefetch, linear_plan, linear_reference, linear_tile

# Router softmax and top-k run in one tile per batch row over all experts' logits.
_MAX_EXPERTS = 1024


@triton.jit
def expert_keys(logits, row, E: tl.constexpr, E_PAD: tl.constexpr):
    """Row ``row``'s experts as 64-bit keys that order them as the route picks them: by softmax probability (fp32,
    as HuggingFace's router computes it), ties to the lower expert id. A key is the probability's bits (non-negative
    floats order as their bits do) over the id reversed, so a pick is one max reduction, not a max and then the
    lowest id holding it. Padding has probability 0 and the highest ids: below every expert, never picked."""
    experts = tl.arange(0, E_PAD)
    z = tl.load(logits + row * E + experts, mask=experts < E, other=-float("inf")).to(tl.float32)
    p = tl.exp(z - tl.max(z, 0))
    p = p / tl.sum(p, 0)
    return (p.to(tl.int32, bitcast=True).to(tl.int64) << 32) | (E_PAD - 1 - experts).to(tl.int64)


@triton.jit
def top_experts(key, TOPK: tl.constexpr, K_PAD: tl.constexpr, E_PAD: tl.constexpr):
    """The TOPK best of ``expert_keys``' keys, in order: their ids and probabilities [K_PAD] (0 past TOPK)."""
    slots = tl.arange(0, K_PAD)
    top = tl.zeros((K_PAD,), tl.float32)
    idx = tl.zeros((K_PAD,), tl.int64)
    for k in tl.static_range(TOPK):
        best = tl.max(key, 0)
        top = tl.where(slots == k, (best >> 32).to(tl.int32).to(tl.float32, bitcast=True), top)
        idx = tl.where(slots == k, E_PAD - 1 - (best & 0xFFFFFFFF), idx)  # the id, from the key's low half
        key = tl.where(key == best, -1, key)  # keys are >= 0: a taken expert is never the best again
    return idx, top


@triton.jit
def route_tile(logits, ids, weights, tile, E: tl.constexpr, E_PAD: tl.constexpr, TOPK: tl.constexpr,
               K_PAD: tl.constexpr, RENORMALIZE: tl.constexpr):
    """Row ``tile``'s top TOPK experts (``expert_keys``) and, where ``weights`` is given, their routing weights."""
    idx, top = top_experts(expert_keys(logits, tile, E, E_PAD), TOPK, K_PAD, E_PAD)
    slots = tl.arange(0, K_PAD)
    tl.store(ids + tile * TOPK + slots, idx, mask=slots < TOPK)
    if weights is not None:  # router_route leaves the weights to routing_weights
        if RENORMALIZE:
            top = top / tl.sum(top, 0)
        tl.store(weights + tile * TOPK + slots, top.to(weights.dtype.element_ty), mask=slots < TOPK)


def ranked_experts(logits_row) -> torch.Tensor:
    """The experts of one row of router logits in the order the route picks them (``expert_keys``)."""
    probs = torch.softmax(logits_row.float(), dim=-1)
    return torch.sort(probs, descending=True, stable=True).indices


def route_reference(logits, ids, tile, TOPK, RENORMALIZE, weights=None):
    probs = torch.softmax(logits[0, tile].float(), dim=-1)
    idx = ranked_experts(logits[0, tile])[:TOPK]
    top = probs[idx]
    ids[tile] = idx
    if weights is not None:
        if RENORMALIZE:
            top /= top.sum()
        weights[tile] = top.to(weights.dtype)


def _route_plan(logits, ids, weights, RENORMALIZE=True):
    if logits.dim() != 3 or logits.shape[0] != 1 or not logits.is_contiguous():
        raise TaskDefinitionError(f"route: logits must be a contiguous [1, B, E] tensor, got {tuple(logits.shape)}")
    _, batch, num = logits.shape
    if ids.dtype != torch.int64 or ids.dim() != 2 or ids.shape[0] != batch or not ids.is_contiguous():
        raise TaskDefinitionError(f"route: ids must be a contiguous int64 [{batch}, TOPK] tensor, got "
                                  f"{ids.dtype} {tuple(ids.shape)}")
    top_k = ids.shape[1]
    if weights.shape != ids.shape or not weights.is_floating_point() or not weights.is_contiguous():
        raise TaskDefinitionError(f"route: weights must be a contiguous float tensor shaped like ids "
                                  f"{tuple(ids.shape)}, got {weights.dtype} {tuple(weights.shape)}")
    if not 1 <= top_k <= num <= _MAX_EXPERTS:
        raise TaskDefinitionError(f"route: {top_k} of {num} experts; need 1 <= TOPK <= E <= {_MAX_EXPERTS}")
    t = tile_arange(batch)
    row = (t, 1)
    return TilePlan(batch, reads={"logits": (ALL, row, ALL)}, writes={"ids": (row, ALL), "weights": (row, ALL)},
                    constexprs={"E": num, "E_PAD": triton.next_power_of_2(num), "TOPK": top_k,
                                "K_PAD": triton.next_power_of_2(top_k), "RENORMALIZE": bool(RENORMALIZE)},
                    cost=0.5)


route = register_task("route", route_tile, inputs=("logits",), outputs=("ids", "weights"), plan=_route_plan,
                      reference=route_reference)


def expected_experts(num: int, top_k: int, batch: int) -> float:
    """How many distinct experts a step of ``batch`` rows routes to under uniform routing, ``top_k`` of ``num`` a
    row: what ``expert_union`` streams, and what a step's floor counts (``megagen bench``). ``top_k`` at batch 1."""
    return num * (1 - (1 - top_k / num) ** batch)


@triton.jit
def expert_union_tile(ids, slots, slot_of, P: tl.constexpr, P_PAD: tl.constexpr):
    """The union of a batch's routed experts: ``slots`` [P] the distinct experts of ``ids`` [B, TOPK] (P = B TOPK) in
    order of first appearance, -1 past them, and ``slot_of`` [B, TOPK] the slot of each row's pick. Each pick is
    compared with every other (P <= 64 for 8 rows of 8 experts)."""
    p = tl.arange(0, P_PAD)
    e = tl.load(ids + p, mask=p < P, other=-1)
    same = (e[:, None] == e[None, :]) & (p[None, :] < P)
    first = tl.min(tl.where(same, p[None, :], P_PAD), axis=1)  # each pick's first appearance
    is_first = (first == p) & (p < P)
    rank = tl.sum(tl.where(is_first[None, :] & (p[None, :] < p[:, None]), 1, 0), axis=1)  # slot of a first one
    slot = tl.sum(tl.where(p[None, :] == first[:, None], rank[None, :], 0), axis=1)
    tl.store(slot_of + p, slot.to(tl.int64), mask=p < P)
    expert = tl.sum(tl.where(is_first[None, :] & (rank[None, :] == p[:, None]), e[None, :], 0), axis=1)
    tl.store(slots + p, tl.where(p < tl.sum(is_first.to(tl.int32), 0), expert, -1).to(tl.int64), mask=p < P)


def expert_union_reference(ids, slots, slot_of, tile, P):
    union = list(dict.fromkeys(ids.view(-1).tolist()))
    slots.fill_(-1)
    slots[:len(union)] = torch.tensor(union, dtype=slots.dtype)
    slot_of.view(-1)[:] = torch.tensor([union.index(e) for e in ids.view(-1).tolist()], dtype=slot_of.dtype)


def _expert_union_plan(ids, slots, slot_of):
    picks = ids.numel()
    if ids.dtype != torch.int64 or ids.dim() != 2 or not ids.is_contiguous():
        raise TaskDefinitionError(f"expert_union: ids must be a contiguous int64 [B, TOPK] tensor, got {ids.dtype} "
                                  f"{tuple(ids.shape)}")
    for name, t, shape in (("slots", slots, (picks,)), ("slot_of", slot_of, tuple(ids.shape))):
        if t.dtype != torch.int64 or tuple(t.shape) != shape or not t.is_contiguous():
            raise TaskDefinitionError(f"expert_union: {name} must be a contiguous int64 {list(shape)} tensor, got "
                                      f"{t.dtype} {tuple(t.shape)}")
    return TilePlan(1, reads={"ids": (ALL, ALL)}, writes={"slots": (ALL,), "slot_of": (ALL, ALL)},
                    constexprs={"P": picks, "P_PAD": triton.next_power_of_2(picks)}, cost=0.5)


expert_union = register_task("expert_union", expert_union_tile, inputs=("ids",), outputs=("slots", "slot_of"),
                             plan=_expert_union_plan, reference=expert_union_reference)


@triton.jit
def router_route_tile(w, x, residual, y, ids, tile, N, B, prefetched, marks, stage, ticket, K: tl.constexpr,
                      BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, B_PAD: tl.constexpr, ROW_TILES: tl.constexpr,
                      TILE_ROWS: tl.constexpr, CHUNK: tl.constexpr, X_PARTS: tl.constexpr, RES_PARTS: tl.constexpr,
                      X_MODE: tl.constexpr, EPS: tl.constexpr, RMS_BLOCK: tl.constexpr, X_IN_W_DTYPE: tl.constexpr,
                      STAGE_BYTES: tl.constexpr, E_PAD: tl.constexpr, TOPK: tl.constexpr, K_PAD: tl.constexpr):
    """A router GEMV tile (``linear_tile``: its rows of the logits, plus the residual's), and in the last of the
    op's tiles to finish (a ticket) every row's route: the experts, without weights (``route_tile``). So the route needs
    no tile of its own, and no CTA of its own to wait on (early routing places these tiles beside the o
    projection's, megagen.decode)."""
    linear_tile(w, x, None, None, None, None, residual, None, None, y, tile, N, B, prefetched, marks, stage, K,
                BLOCK_N, BLOCK_K, B_PAD, ROW_TILES, TILE_ROWS, CHUNK, X_PARTS, RES_PARTS, X_MODE, EPS, RMS_BLOCK,
                X_IN_W_DTYPE, STAGE_BYTES)
    if take_ticket(ticket, 0, ROW_TILES):
        for b in range(0, B):
            route_tile(y, ids, None, b, N, E_PAD, TOPK, K_PAD, False)


def router_route_reference(w, x, residual, y, ids, tile, N, B, K, ROW_TILES, TILE_ROWS, CHUNK, X_PARTS, RES_PARTS,
                           X_MODE, EPS, TOPK):
    linear_reference(w, x, None, None, None, None, residual, None, None, y, tile, N, B, K, ROW_TILES, TILE_ROWS, CHUNK,
                     X_PARTS, RES_PARTS, X_MODE, EPS)
    if tile == ROW_TILES - 1:  # the reference runs tiles in order: the last sees every row of the logits
        for b in range(B):
            route_reference(y, ids, b, TOPK, False)


def _router_route_plan(w, x, y, ids, residual=None, **params):
    """``linear_plan`` of a router without K splits (y [1, B, E] logits), its tiles one ticket group whose last
    writes ``ids`` [B, TOPK] from all the logits."""
    plan = linear_plan(w, x, y, residual=residual, **params)
    batch, num = y.shape[1], y.shape[2]
    if y.shape[0] != 1 or plan.constexprs["ROW_TILES"] != plan.num_tiles:
        raise TaskDefinitionError(f"router_route: the logits must be one part [1, B, E] (no K splits), got "
                                  f"{tuple(y.shape)}")
    if ids.dtype != torch.int64 or ids.dim() != 2 or ids.shape[0] != batch or not ids.is_contiguous():
        raise TaskDefinitionError(f"router_route: ids must be a contiguous int64 [{batch}, TOPK] tensor, got "
                                  f"{ids.dtype} {tuple(ids.shape)}")
    top_k = ids.shape[1]
    if not 1 <= top_k <= num <= _MAX_EXPERTS:
        raise TaskDefinitionError(f"router_route: {top_k} of {num} experts; need 1 <= TOPK <= E <= {_MAX_EXPERTS}")
    plan.reads["y"] = (ALL, ALL, ALL)  # the last tile's route reads every tile's logits
    plan.writes["ids"] = (ALL, ALL)
    plan.constexprs.update(E_PAD=triton.next_power_of_2(num), TOPK=top_k, K_PAD=triton.next_power_of_2(top_k))
    plan.tickets = np.zeros(plan.num_tiles, np.int64)
    return plan


# the router of early routing (megagen.decode): the logits' second GEMV, with the route in its last tile
router_route = register_task("router_route", router_route_tile, inputs=("w", "x", "residual"), outputs=("y", "ids"),
                             plan=_router_route_plan, prefetch=gemv_prefetch, reference=router_route_reference)


@triton.jit
def expert_tile(w, x, x2, norm_w, ids, y, tile, N, B, marks, K: tl.constexpr, BLOCK_N: tl.constexpr,
                BLOCK_K: tl.constexpr, ROW_TILES: tl.constexpr, TILE_ROWS: tl.constexpr, CHUNK: tl.constexpr,
                X_PARTS: tl.constexpr, X_MODE: tl.constexpr, EPS: tl.constexpr, RMS_BLOCK: tl.constexpr,
                SLOT_TILES: tl.constexpr, W_ROW0: tl.constexpr, EXPERT_ROWS: tl.constexpr,
                X_ROW_DIV: tl.constexpr, UNION: tl.constexpr, B_PAD: tl.constexpr, X_IN_W_DTYPE: tl.constexpr,
                X_SLOT: tl.constexpr, Y_SLOT: tl.constexpr):
    """One tile of linear.py's GEMV for slot ``tile // SLOT_TILES``, whose expert, read from ``ids``, picks rows
    W_ROW0.. of its weights in the stack. A routed slot (``UNION`` off) is a batch of one: x's row is the slot's batch
    row (X_ROW_DIV = TOPK) or the slot itself (X_ROW_DIV = 1), and ``B`` is x's row count, the stride of its partial
    sums and of y's K chunks. A union slot (``expert_union``) multiplies all B rows of x, its own rows of it (X_SLOT
    elements a slot) or the shared stream (X_SLOT = 0), into its Y_SLOT elements of y; a slot past the union (-1)
    streams nothing."""
    slot = tile // SLOT_TILES
    sub = tile % SLOT_TILES
    expert = tl.load(ids + slot)
    w_e = w + (expert * EXPERT_ROWS + W_ROW0) * K
    if UNION:
        if expert >= 0:
            if X_MODE == "silu_mul":
                x2 = x2 + slot * X_SLOT
            first = gemv_prefetch(w_e, sub, N, None, K, BLOCK_N, BLOCK_K, B_PAD, ROW_TILES, TILE_ROWS, CHUNK, False,
                                  0)
            linear_tile(w_e, x + slot * X_SLOT, None, x2, norm_w, None, None, None, None, y + slot * Y_SLOT, sub, N,
                        B, first, marks, None, K, BLOCK_N, BLOCK_K, B_PAD, ROW_TILES, TILE_ROWS, CHUNK, X_PARTS, 1,
                        X_MODE, EPS, RMS_BLOCK, X_IN_W_DTYPE, False)
    else:
        row = slot // X_ROW_DIV
        if X_MODE == "silu_mul":
            x2 = x2 + row * K
        first = gemv_prefetch(w_e, sub, N, None, K, BLOCK_N, BLOCK_K, 1, ROW_TILES, TILE_ROWS, CHUNK, False, 0)
        linear_tile(w_e, x + row * K, None, x2, norm_w, None, None, None, None, y + slot * N, sub, N, B, first, marks,
                    None, K, BLOCK_N, BLOCK_K, 1, ROW_TILES, TILE_ROWS, CHUNK, X_PARTS, 1, X_MODE, EPS, RMS_BLOCK,
                    False, False)


def expert_reference(w, x, x2, norm_w, ids, y, tile, N, K, ROW_TILES, TILE_ROWS, CHUNK, X_PARTS, X_MODE, EPS,
                     SLOT_TILES, W_ROW0, X_ROW_DIV, UNION, B, X_SLOT):
    slot, sub = divmod(tile, SLOT_TILES)
    expert = int(ids.view(-1)[slot])
    if UNION:
        if expert < 0:
            return
        split = y.shape[0] // ids.numel()

        def own(t):
            return None if t is None else (t[slot:slot + 1] if X_SLOT else t)
        linear_reference(w[expert, W_ROW0:W_ROW0 + N], own(x), None, own(x2), norm_w, None, None, None, None,
                         y[slot * split:(slot + 1) * split], sub, N, B, K, ROW_TILES, TILE_ROWS, CHUNK, X_PARTS, 1,
                         X_MODE, EPS)
        return
    row = slot // X_ROW_DIV
    out = y[:, slot:slot + 1].clone()  # the slot's output as a batch of one

    def one_row(t):
        return None if t is None else t[:, row:row + 1].contiguous()
    linear_reference(w[expert, W_ROW0:W_ROW0 + N], one_row(x), None, one_row(x2), norm_w, None, None, None, None, out,
                     sub, N, 1, K, ROW_TILES, TILE_ROWS, CHUNK, X_PARTS, 1, X_MODE, EPS)
    y[:, slot] = out[:, 0]


def _expert_plan(w, x, ids, y, x2=None, norm_w=None, eps=1e-6, row0=0, rows=None, BLOCK_N=32, BLOCK_K=512,
                 TILE_ROWS=None):
    """linear.py's plan for one slot, repeated for every slot: a routed slot (``ids`` [B, TOPK]) is a batch of one over
    expert 0's rows; a union slot (``ids`` [P], ``expert_union``'s) a batch of every row, y [P * S, B, N] slot by
    slot, and x either the shared stream [X_PARTS, B, K] or, where x2 is given (down over gate and up), [P, B, K]."""
    if w.dim() != 3 or not w.is_contiguous():
        raise TaskDefinitionError(f"expert GEMV: w must be contiguous stacked experts [E, rows, K], got "
                                  f"{tuple(w.shape)}")
    num, expert_rows, k = w.shape
    n = expert_rows - row0 if rows is None else rows
    if not 0 <= row0 < row0 + n <= expert_rows:
        raise TaskDefinitionError(f"expert GEMV: rows {row0}..{row0 + n} are outside an expert's {expert_rows}")
    if ids.dtype != torch.int64 or ids.dim() not in (1, 2) or not ids.is_contiguous():
        raise TaskDefinitionError(f"expert GEMV: ids must be a contiguous int64 [B, TOPK] tensor (routed slots) or "
                                  f"[P] (expert_union's slots), got {ids.dtype} {tuple(ids.shape)}")
    if ids.dim() == 1:
        return _union_expert_plan(w, x, ids, y, x2, norm_w, eps, row0, n, BLOCK_N, BLOCK_K, TILE_ROWS)
    check_pairs_aligned(w, "expert GEMV")  # routed slots' tiles are batch-1 GEMV tiles
    batch, top_k = ids.shape
    slots = batch * top_k
    for name, t in (("x", x), ("x2", x2)):
        if t is not None and (t.dim() != 3 or t.shape[1] not in (batch, slots) or not t.is_contiguous()):
            raise TaskDefinitionError(f"expert GEMV: {name} must be a contiguous [P, B, {k}] or [P, B * TOPK, {k}] "
                                      f"tensor (B={batch}, TOPK={top_k}), got {tuple(t.shape)}")
    if y.dim() != 3 or y.shape[1:] != (slots, n) or not y.is_contiguous():
        raise TaskDefinitionError(f"expert GEMV: y must be a contiguous [S, {slots}, {n}] tensor (a row per routed "
                                  f"slot), got {tuple(y.shape)}")
    x_rows, split = x.shape[1], y.shape[0]
    if split > 1 and x_rows != slots:
        raise TaskDefinitionError("expert GEMV: split-K output needs x with a row per slot (its K chunks are "
                                  "strided by x's rows)")

    def meta(t, rows_):
        return None if t is None else torch.empty(t.shape[0], rows_, t.shape[-1], dtype=t.dtype, device="meta")
    one = linear_plan(torch.empty(n, k, dtype=w.dtype, device="meta"), meta(x, 1), meta(y, 1), x2=meta(x2, 1),
                       norm_w=norm_w, eps=eps, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, TILE_ROWS=TILE_ROWS, stage=False)
    cx = one.constexprs
    t, s, r, c = _slot_grid(one, slots)
    tile_rows, chunk = cx["TILE_ROWS"], cx["CHUNK"]
    x_row = (s // (slots // x_rows), 1)
    slot = (s // top_k, 1), (s % top_k, 1)
    out_rows = (r * tile_rows, tile_rows)
    cols = (c * chunk, chunk)
    x_cols = ALL if norm_w is not None else cols  # RMSNorm needs the whole row
    reads = {"w": (ALL, (row0 + r * tile_rows, tile_rows), cols), "ids": slot, "x": (ALL, x_row, x_cols)}
    if x2 is not None:
        reads["x2"] = (ALL, x_row, cols)
    if norm_w is not None:
        reads["norm_w"] = (ALL,)
    constexprs = {**cx, "SLOT_TILES": one.num_tiles, "W_ROW0": row0, "EXPERT_ROWS": expert_rows,
                  "X_ROW_DIV": slots // x_rows, "UNION": False, "B_PAD": 1, "X_IN_W_DTYPE": False, "X_SLOT": 0,
                  "Y_SLOT": 0}
    return TilePlan(t.size, reads=reads, writes={"y": ((c, 1), (s, 1), out_rows)},
                    scalars={"N": n, "B": x_rows}, constexprs=constexprs, cost=one.cost)


def _slot_grid(one, slots: int):
    """The tiles of ``slots`` slots of linear.py's plan ``one`` each, slot by slot: (tile ids, slots, row tiles, K
    chunks)."""
    per_slot, row_tiles = one.num_tiles, one.constexprs["ROW_TILES"]
    t = tile_arange(slots * per_slot)
    s, sub = t // per_slot, t % per_slot
    return t, s, sub % row_tiles, sub // row_tiles


def _union_expert_plan(w, x, ids, y, x2, norm_w, eps, row0, n, BLOCK_N, BLOCK_K, TILE_ROWS):
    """``_expert_plan`` for union slots: linear.py's plan of a batch of every row, repeated for every slot."""
    _, expert_rows, k = w.shape
    slots = ids.numel()
    if y.dim() != 3 or y.shape[0] % slots or y.shape[2] != n or not y.is_contiguous():
        raise TaskDefinitionError(f"expert GEMV: y must be a contiguous [P * S, B, {n}] tensor (each of the P = "
                                  f"{slots} union slots' [S, B, {n}] in turn), got {tuple(y.shape)}")
    split, batch = y.shape[0] // slots, y.shape[1]
    per_slot_x = x2 is not None  # down reads each slot's own gate and up rows; gate and up read the shared stream
    for name, t in (("x", x), ("x2", x2)):
        if t is not None and (t.dim() != 3 or t.shape[1] != batch or not t.is_contiguous()
                              or (per_slot_x and t.shape[0] != slots)):
            raise TaskDefinitionError(f"expert GEMV: {name} must be a contiguous "
                                      f"{'[P, B, K]' if per_slot_x else '[X_PARTS, B, K]'} tensor (P = {slots}, "
                                      f"B = {batch}, K = {k}), got {tuple(t.shape)}")

    def meta(t):
        return None if t is None else torch.empty(1 if per_slot_x else t.shape[0], batch, k, dtype=t.dtype,
                                                  device="meta")
    one = linear_plan(torch.empty(n, k, dtype=w.dtype, device="meta"), meta(x),
                      torch.empty(split, batch, n, dtype=y.dtype, device="meta"), x2=meta(x2), norm_w=norm_w, eps=eps,
                      BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, TILE_ROWS=TILE_ROWS, stage=False)
    cx = one.constexprs
    t, s, r, c = _slot_grid(one, slots)
    tile_rows, chunk = cx["TILE_ROWS"], cx["CHUNK"]
    cols = (c * chunk, chunk)
    x_box = ((s, 1) if per_slot_x else ALL, ALL, ALL if norm_w is not None else cols)
    reads = {"w": (ALL, (row0 + r * tile_rows, tile_rows), cols), "ids": ((s, 1),), "x": x_box}
    if x2 is not None:
        reads["x2"] = ((s, 1), ALL, cols)
    if norm_w is not None:
        reads["norm_w"] = (ALL,)
    constexprs = {**cx, "SLOT_TILES": one.num_tiles, "W_ROW0": row0, "EXPERT_ROWS": expert_rows, "X_ROW_DIV": 1,
                  "UNION": True, "X_SLOT": batch * k if per_slot_x else 0, "Y_SLOT": split * batch * n}
    return TilePlan(t.size, reads=reads, writes={"y": ((s * split + c, 1), ALL, (r * tile_rows, tile_rows))},
                    scalars={"N": n, "B": batch}, constexprs=constexprs, cost=one.cost)


expert_rmsnorm_gemv = register_task("expert_rmsnorm_gemv", expert_tile, inputs=("w", "x", "norm_w", "ids"),
                                    outputs=("y",), plan=_expert_plan, reference=expert_reference)
expert_silu_mul_gemv = register_task("expert_silu_mul_gemv", expert_tile, inputs=("w", "x", "x2", "ids"),
                                     outputs=("y",), plan=_expert_plan, reference=expert_reference)


@triton.jit
def _round_to(v, DTYPE: tl.constexpr):
    """fp32 ``v`` rounded to the model dtype (by name) and back."""
    if DTYPE == "bfloat16":
        v = v.to(tl.bfloat16).to(tl.float32)
    elif DTYPE == "float16":
        v = v.to(tl.float16).to(tl.float32)
    return v


@triton.jit
def routing_weights_tile(logits, residual, weights, tile, B, H: tl.constexpr, H_PAD: tl.constexpr,
                         E: tl.constexpr, E_PAD: tl.constexpr, TOPK: tl.constexpr, K_PAD: tl.constexpr,
                         RES_PARTS: tl.constexpr, EPS: tl.constexpr, RENORMALIZE: tl.constexpr, DTYPE: tl.constexpr):
    """Row ``tile``'s routing weights from logits that lack the post-attention RMSNorm's factor (``router_route``'s):
    that factor from the residual stream row after o (its fp32 parts), then the router's logits rounded to the model
    dtype, their softmax in fp32, the routed experts' probabilities, renormalised where the family says and stored
    in the dtype HuggingFace casts them to, as ``route`` computes them. The experts are the route's, picked again
    from the logits (``top_experts``), so the tile waits on no route."""
    cols = tl.arange(0, H_PAD)
    h = tl.zeros((H_PAD,), tl.float32)
    for p in tl.static_range(RES_PARTS):
        h += tl.load(residual + (p * B + tile) * H + cols, mask=cols < H, other=0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(h * h, 0) / H + EPS)
    routed, _ = top_experts(expert_keys(logits, tile, E, E_PAD), TOPK, K_PAD, E_PAD)
    experts = tl.arange(0, E_PAD)
    z = _round_to(tl.load(logits + tile * E + experts, mask=experts < E, other=0.0) * rstd, DTYPE)
    z = tl.where(experts < E, z, -float("inf"))
    prob = tl.exp(z - tl.max(z, 0))
    prob = prob / tl.sum(prob, 0)
    slots = tl.arange(0, K_PAD)
    routed = tl.where(slots < TOPK, routed, -1)
    top = tl.sum(tl.where(experts[None, :] == routed[:, None], prob[None, :], 0.0), 1)  # [K_PAD]
    if RENORMALIZE:
        top = top / tl.sum(top, 0)
    tl.store(weights + tile * TOPK + slots, top.to(weights.dtype.element_ty), mask=slots < TOPK)


def routing_weights_reference(logits, residual, weights, tile, EPS, TOPK, RENORMALIZE, DTYPE):
    h = residual[:, tile].sum(0)
    rstd = torch.rsqrt(h.pow(2).mean() + EPS)
    z = (logits[0, tile] * rstd).to(getattr(torch, DTYPE)).float()
    top = torch.softmax(z, dim=-1)[ranked_experts(logits[0, tile])[:TOPK]]
    if RENORMALIZE:
        top = top / top.sum()
    weights[tile] = top.to(weights.dtype)


def _routing_weights_plan(logits, residual, weights, eps=1e-6, RENORMALIZE=True, dtype=torch.float32):
    """A tile per batch row: logits [1, B, E] and the residual stream [P, B, H] fp32, weights [B, TOPK]; ``eps``
    the post-attention RMSNorm's, ``dtype`` the model's (where HuggingFace rounds the logits)."""
    shapes = {name: tuple(t.shape) for name, t in (("logits", logits), ("residual", residual), ("weights", weights))}
    fits = (logits.dim() == residual.dim() == 3 and weights.dim() == 2
            and logits.shape[:2] == (1, weights.shape[0]) and residual.shape[1] == weights.shape[0]
            and 1 <= weights.shape[1] <= logits.shape[2] <= _MAX_EXPERTS)
    kinds = (logits.dtype == residual.dtype == torch.float32
             and all(t.is_contiguous() for t in (logits, residual, weights)))
    if not (fits and kinds):
        raise TaskDefinitionError(f"routing_weights: needs contiguous fp32 logits [1, B, E] and residual [P, B, H], "
                                  f"weights [B, TOPK], 1 <= TOPK <= E <= {_MAX_EXPERTS}; got {shapes}, logits "
                                  f"{logits.dtype}, residual {residual.dtype}")
    (batch, top_k), num, hidden = weights.shape, logits.shape[2], residual.shape[2]
    t = tile_arange(batch)
    row = (t, 1)
    return TilePlan(batch, reads={"logits": (ALL, row, ALL), "residual": (ALL, row, ALL)},
                    writes={"weights": (row, ALL)}, scalars={"B": batch},
                    constexprs={"H": hidden, "H_PAD": triton.next_power_of_2(hidden), "E": num,
                                "E_PAD": triton.next_power_of_2(num), "TOPK": top_k,
                                "K_PAD": triton.next_power_of_2(top_k), "RES_PARTS": residual.shape[0],
                                "EPS": float(eps), "RENORMALIZE": bool(RENORMALIZE),
                                "DTYPE": str(dtype).removeprefix("torch.")},
                    cost=0.5)


# early routing's weights (megagen.decode), once the stream after o is known, beside the experts' gate / up
routing_weights = register_task("routing_weights", routing_weights_tile, inputs=("logits", "residual"),
                                outputs=("weights",), plan=_routing_weights_plan, reference=routing_weights_reference)


@triton.jit
def combine_tile(parts, weights, residual, slot_of, out, tile, B, H: tl.constexpr, TOPK: tl.constexpr,
                 SPLIT: tl.constexpr, RES_PARTS: tl.constexpr, BLOCK: tl.constexpr, COL_TILES: tl.constexpr,
                 DTYPE: tl.constexpr):
    """Columns of one batch row: the residual plus its picks' down outputs times their routing weights. Without
    ``slot_of`` pick k of row b is routed slot b TOPK + k of ``parts`` [SPLIT, B TOPK, H]; with it, union slot
    slot_of[b, k] of ``parts`` [P SPLIT, B, H] (``expert_union``)."""
    b = tile // COL_TILES
    cols = (tile % COL_TILES) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < H
    acc = tl.zeros((BLOCK,), tl.float32)
    if residual is not None:
        for p in tl.static_range(RES_PARTS):
            acc += tl.load(residual + (p * B + b) * H + cols, mask=mask, other=0.0)
    for k in tl.static_range(TOPK):
        pick = b * TOPK + k
        down = tl.zeros((BLOCK,), tl.float32)
        if slot_of is not None:
            first = (tl.load(slot_of + pick) * SPLIT * B + b) * H
            for s in tl.static_range(SPLIT):
                down += tl.load(parts + first + s * B * H + cols, mask=mask, other=0.0)
        else:
            for s in tl.static_range(SPLIT):
                down += tl.load(parts + (s * B * TOPK + pick) * H + cols, mask=mask, other=0.0)
        weight = tl.load(weights + pick).to(tl.float32)
        acc += _round_to(_round_to(down, DTYPE) * weight, DTYPE)
    tl.store(out + b * H + cols, acc, mask=mask)


def combine_reference(parts, weights, residual, out, tile, B, H, TOPK, SPLIT, BLOCK, COL_TILES, DTYPE, slot_of=None):
    b, c = divmod(tile, COL_TILES)
    cols = slice(c * BLOCK, (c + 1) * BLOCK)
    dtype = getattr(torch, DTYPE)
    if slot_of is None:
        down = parts[:, b * TOPK:(b + 1) * TOPK, cols].sum(0)  # [TOPK, cols]
    else:
        down = torch.stack([parts.view(-1, SPLIT, B, H)[slot, :, b, cols].sum(0) for slot in slot_of[b].tolist()])
    scaled = (down.to(dtype).float() * weights[b, :, None].float()).to(dtype).float()
    acc = residual[:, b, cols].sum(0) if residual is not None else torch.zeros_like(scaled[0])
    for k in range(TOPK):
        acc = acc + scaled[k]
    out[0, b, cols] = acc


def _combine_plan(parts, weights, out, residual=None, slot_of=None, dtype=torch.float32, BLOCK=256):
    """Tiles of BLOCK columns of one batch row. ``dtype``: the model's, where HuggingFace rounds the experts'
    outputs. ``slot_of``: each pick's union slot (``expert_union``), where ``parts`` are the union slots'."""
    batch, top_k = weights.shape
    hidden = out.shape[-1]
    parts_shape = (None, batch * top_k, hidden) if slot_of is None else (None, batch, hidden)
    shapes = {"parts": (parts, parts_shape), "out": (out, (1, batch, hidden))}
    if residual is not None:
        shapes["residual"] = (residual, (None, batch, hidden))
    for name, (t, shape) in shapes.items():
        if (t.dim() != 3 or t.dtype != torch.float32 or not t.is_contiguous()
                or any(want is not None and got != want for got, want in zip(t.shape, shape))):
            raise TaskDefinitionError(f"moe_combine: {name} must be a contiguous fp32 "
                                      f"[{', '.join('P' if d is None else str(d) for d in shape)}] tensor, got "
                                      f"{t.dtype} {tuple(t.shape)}")
    split = parts.shape[0]
    if slot_of is not None:
        if slot_of.dtype != torch.int64 or slot_of.shape != weights.shape or not slot_of.is_contiguous():
            raise TaskDefinitionError(f"moe_combine: slot_of must be a contiguous int64 tensor shaped like the "
                                      f"weights {tuple(weights.shape)}, got {slot_of.dtype} {tuple(slot_of.shape)}")
        if split % (batch * top_k):
            raise TaskDefinitionError(f"moe_combine: union parts must be [P * S, B, H] with P = {batch * top_k} "
                                      f"slots, got {tuple(parts.shape)}")
        split //= batch * top_k
    if BLOCK < 1 or BLOCK & (BLOCK - 1):
        raise TaskDefinitionError(f"moe_combine: BLOCK must be a power of two, got {BLOCK}")
    col_tiles = cdiv(hidden, BLOCK)
    t = tile_arange(batch * col_tiles)
    row, cols = (t // col_tiles, 1), ((t % col_tiles) * BLOCK, BLOCK)
    if slot_of is None:
        reads = {"parts": (ALL, (row[0] * top_k, top_k), cols), "weights": (row, ALL)}
    else:  # a pick's slot is known only at run time: every slot's rows of this batch row
        reads = {"parts": (ALL, row, cols), "weights": (row, ALL), "slot_of": (row, ALL)}
    constexprs = {"H": hidden, "TOPK": top_k, "SPLIT": split, "BLOCK": BLOCK, "COL_TILES": col_tiles,
                  "DTYPE": str(dtype).removeprefix("torch."), "RES_PARTS": 1}
    if residual is not None:
        reads["residual"] = (ALL, row, cols)
        constexprs["RES_PARTS"] = residual.shape[0]
    else:
        constexprs["residual"] = None
    if slot_of is None:
        constexprs["slot_of"] = None
    return TilePlan(t.size, reads=reads, writes={"out": ((0, 1), row, cols)}, scalars={"B": batch},
                    constexprs=constexprs, cost=0.5)


moe_combine = register_task("moe_combine", combine_tile, inputs=("parts", "weights"), outputs=("out",),
                            plan=_combine_plan, reference=combine_reference)
moe_combine_residual = register_task("moe_combine_residual", combine_tile, inputs=("parts", "weights", "residual"),
                                     outputs=("out",), plan=_combine_plan, reference=combine_reference)
moe_combine_union = register_task("moe_combine_union", combine_tile, inputs=("parts", "weights", "slot_of"),
                                  outputs=("out",), plan=_combine_plan, reference=combine_reference)
moe_combine_union_residual = register_task("moe_combine_union_residual", combine_tile,
                                           inputs=("parts", "weights", "slot_of", "residual"), outputs=("out",),
                                           plan=_combine_plan, reference=combine_reference)
