"""The decode step as a TaskGraph: one token per batch row through the whole model.

Per layer the graph has these dependency phases (tiles of one phase run side by side, and a
tile starts as soon as the tiles it reads are done):

1. q, k, v projections with the input RMSNorm fused in (and Qwen2's biases);
2. split-KV attention, which applies RoPE (after Qwen3's q/k RMSNorm) itself and appends the new key and value
   to the KV cache; the last split of each KV head to finish merges the splits (``megagen.tasks.attention``);
3. o projection, adding the residual stream;
4. gate and up projections with the post-attention RMSNorm fused in;
5. down projection over silu(gate) * up, adding the residual stream.

For a batch (from ``Tiling.norm_phase_min_batch``, 2, on) the RMSNorms before 1 and 4 and before the lm_head
are ops of their own (``megagen.tasks.norm``): the GEMVs then read the normalised rows in the model dtype
instead of every tile reading the residual stream's fp32 partial sums twice (Llama-3.2-1B at batch 8 on an
H100: 2.04 -> 1.49 ms a step; at batch 1, where the extra phase costs more than it saves, they stay fused).

With ``fuse_mlp=True``, at batch 1 on one rank, for a dense model whose intermediate size one wave of
16-row tiles covers, 4 and 5 are one phase (``megagen.tasks.mlp``, ``Tiling.mlp_tiles``): each tile takes
16 intermediate rows through gate, up and down and adds its partial sums to the residual stream with
atomics, into a fixed-point part the o projection cleared (so the sums do not depend on the order tiles
finish); the stream's readers are the ``*_fixed`` GEMVs. It reads a column-major copy of the down
weights (``Projection.columns``).

A mixture-of-experts layer replaces 4 and 5 by the router (the post-attention RMSNorm fused in), the
top-k routing, the routed experts' gate and up, their down, and the routing-weighted sum into the
residual stream (``megagen.tasks.moe``).

Under tensor parallelism (a rank's shard, ``megagen.shard``) the o and down projections write
their partial sums to symmetric buffers instead, and an allreduce phase after each adds every
rank's partials to the residual stream (``megagen.tasks.comm``); at the end each rank's
argmax covers its slice of the vocabulary and the next token is picked across ranks.

The residual stream is fp32 and travels as split-K partial sums ([S, B, hidden]), so a
projection with too few output rows to fill the GPU splits along K without an extra
reduction phase. At the end: the final RMSNorm fused into lm_head, a two-stage argmax (a block for each
lm_head tile; or, sampling, a two-stage draw: ``megagen.tasks.multinomial``), and the next token and position
written on the device, so the next launch needs nothing from the host. Every intermediate
has its own buffer: no write-after-read hazards between layers, and every intermediate can
be compared with the reference executor.
"""
from __future__ import annotations

import dataclasses
import typing

import torch
import triton

from megagen.errors import MegagenError
from megagen.generation import Sampling
from megagen.graph import TaskGraph
from megagen.tasks import attention as A
from megagen.tasks import linear as Lin
from megagen.tasks import mlp as Mlp
from megagen.tasks import moe as Moe
from megagen.tasks import multinomial as M
from megagen.tasks import norm as Norm
from megagen.tasks import sampling as S
from megagen.tasks.base import cdiv
from megagen.tasks.comm import allreduce_ops
from megagen.world import EmulatedWorld, World


@dataclasses.dataclass
class DecodeState:
    """Device state a decode step reads and writes: next tokens, positions, KV cache, RoPE tables, and the
    sampling settings (one-element tensors, so one kernel serves every setting and a step stays launch-only)."""

    tokens: torch.Tensor  # [B_max] int64
    pos: torch.Tensor  # [B_max] int64
    k_cache: list[torch.Tensor]  # per layer [B_max, KV, S_max, D]
    v_cache: list[torch.Tensor]
    cos: torch.Tensor  # [S_max, D]
    sin: torch.Tensor
    seed: torch.Tensor  # [1] int64
    temperature: torch.Tensor  # [1] float32
    top_k: torch.Tensor  # [1] int64: 0 keeps every token
    top_p: torch.Tensor  # [1] float32

    @classmethod
    def allocate(cls, decoder, max_batch_size: int, max_seq_len: int) -> "DecodeState":
        dev, dt = decoder.device, decoder.dtype
        a = decoder.layers[0].attn
        shape = (max_batch_size, a.kv_heads, max_seq_len, a.head_dim)
        cos, sin = decoder.rope_tables(max_seq_len)
        return cls(tokens=torch.zeros(max_batch_size, dtype=torch.int64, device=dev),
                   pos=torch.zeros(max_batch_size, dtype=torch.int64, device=dev),
                   k_cache=[torch.zeros(shape, dtype=dt, device=dev) for _ in decoder.layers],
                   v_cache=[torch.zeros(shape, dtype=dt, device=dev) for _ in decoder.layers],
                   cos=cos, sin=sin, seed=torch.zeros(1, dtype=torch.int64, device=dev),
                   temperature=torch.ones(1, device=dev), top_k=torch.zeros(1, dtype=torch.int64, device=dev),
                   top_p=torch.ones(1, device=dev))

    def set_sampling(self, sampling: Sampling) -> None:
        """Write a generation's sampling settings where the sampling tasks read them."""
        self.seed.fill_(sampling.seed)
        self.temperature.fill_(sampling.temperature)
        self.top_k.fill_(sampling.top_k)
        self.top_p.fill_(sampling.top_p)


# What a tile costs beyond streaming its weights (dispatch, wait, release, the first load's latency), in
# bytes a CTA streams meanwhile: about 2 us between lm_head tiles at about 16 KB/us per CTA (waterfall of a
# Qwen3-8B profile, H200, BENCHMARKS.md).
TASK_OVERHEAD_BYTES = 32 * 1024
# the residual stream's readers, and their forms that also read a fused MLP's fixed-point part of it
FIXED_READERS = {Lin.rmsnorm_gemv: Lin.rmsnorm_gemv_fixed, Lin.rmsnorm_gemv_bias: Lin.rmsnorm_gemv_bias_fixed,
                 Lin.gemv_residual_zero: Lin.gemv_residual_zero_fixed}
# the stream's norm-fusing readers, and the GEMVs that read a norm op's rows instead (Tiling.norm_phase_min_batch)
NORMED_READERS = {Lin.rmsnorm_gemv: Lin.gemv, Lin.rmsnorm_gemv_bias: Lin.gemv_bias}
MAX_K_SPLITS = 4  # every consumer of a split-K output reads all its partial sums
# What an attention split's keys weigh at least (their key and value rows), unless Tiling.attention_split_keys says
# otherwise: 32 keys of 128-wide bf16 heads, 64 of 64-wide. Measured at context 512 on two H100s (BENCHMARKS.md,
# 2026-11-26, sixteenth session): Qwen3-0.6B (128-wide) 0.854 ms a step with 16 splits of 32 keys against 0.864 with
# 8 of 64; Llama-3.2-1B (64-wide) 1.091 with 8 of 64 against 1.097 with 16 of 32 (1.082 against 1.089 on the other).
ATTENTION_SPLIT_BYTES = 16 * 1024
MLP_TILE_ROWS = 16  # intermediate rows a fused MLP tile takes
ARGMAX_ROWS = 4096  # logits an argmax tile takes at batch > 1 (lm_head_tiling)
# GEMV weight blocks (rows, columns) from tp=4 on (Tiling.for_tp): 8-row blocks measured 17% faster than 16 for
# Qwen3-8B at tp=4 on H200s (BENCHMARKS.md, tensor parallelism); not measured against 32 x 256.
TP_BLOCK = (8, 512)
# The batch-1 GEMV tile cost (Tiling._batch1_tile_us), in us, from profiles (BENCHMARKS.md): a tile's fixed cost
# (dispatch, wait, the first load), a row block's end (Qwen3-0.6B and Llama-3.2-1B lm_heads on an H200: 0.62),
# a loop step's round trip where few CTAs stream (Llama-3.2-1B's q/k/v, 96 tiles of 8 steps on an H100: about 0.8),
# and each CTA's share of the copy bandwidth (3.2 TB/s over 264 CTAs).
TILE_US = 2.0
ROW_BLOCK_END_US = 0.6
STEP_LATENCY_US = 0.8
CTA_BYTES_PER_US = 12_000
# A phase takes other weight blocks than the tiling's only where the cost predicts it this much faster: more, shorter
# tiles also cost what the cost leaves out (e.g. tiles on CTAs still busy with the phase before). On an H100
# (BENCHMARKS.md) Llama-3.2-1B's q/k/v, predicted 29% faster with 16 x 512 blocks, took its step 1.158 -> 1.145 ms;
# Qwen3-0.6B's, predicted 9% faster, 1.001 -> 1.065.
BLOCK_SWITCH_GAIN = 0.2
MIN_BLOCK_ROWS = 4  # the shortest batch-1 weight blocks gemv_blocks offers


class GemvTiles(typing.NamedTuple):
    """A GEMV phase's tiling (``Tiling.gemv_tiles``): rows per tile, K splits, weight block rows and columns."""
    rows: int
    split: int
    block_n: int
    block_k: int


@dataclasses.dataclass(frozen=True)
class Tiling:
    """Tile sizes of the decode graph and the CTA count its phases are sized for."""

    num_ctas: int
    # Batch-1 GEMV weight blocks. 32 x 256 against 16 x 512 (as many weights, as many bytes in flight) on an H200:
    # Qwen3-0.6B 1.004 -> 0.938 ms a step, Llama-3.2-1B 0.981 -> 0.966, Qwen3-8B 4.867 -> 4.568 (BENCHMARKS.md).
    # Each row block of a tile ends in a reduction and a store that stall its loads (about 0.6 us), and 16 x 512
    # blocks give a row block only K / 512 loop steps. A batch's blocks are at least batch_block_rows tall
    # (linear.block_shape): the same at batch > 1 either way.
    block_n: int = 32
    block_k: int = 256
    attention_block: int = 32
    max_attention_splits: int = 32
    # None: as many keys as make ATTENTION_SPLIT_BYTES of cached keys and values (attention_split_keys_for)
    attention_split_keys: int | None = None
    max_tile_rows: int = 128
    # q/k/v may split K (the attention adds the partial sums) only for a batch, over a hidden size at least this
    # large. Measured on an H100 at batch 8 (BENCHMARKS.md): Llama-3.2-1B (K = 2048: 48 tiles of 16 block steps
    # -> 192 of 4) 2.25-2.30 -> 2.05 ms a step; Qwen3-0.6B (K = 1024) 2.12-2.13 -> 2.14-2.16, its tiles bound by
    # reading x, not weights; at batch 1 Llama-3.2-1B 1.139 -> 1.192 ms.
    qkv_split_min_k: int = 2048
    # From this batch size on, the RMSNorms before q/k/v, gate/up and the lm_head are ops of their own
    # (megagen.tasks.norm), and the GEMVs read the normalised rows in the model dtype: one phase more, in return
    # for tiles that no longer read the stream's fp32 partial sums twice each (see BENCHMARKS.md).
    norm_phase_min_batch: int = 2
    # A batch's GEMV weight blocks are at least this many rows (16, 32 or 64; linear.block_shape).
    batch_block_rows: int = Lin.DOT_ROWS
    # The most K splits of the o and down projections where the RMSNorms are ops of their own: then only the norm
    # tiles read all their partial sums (and the next residual add its rows of them). 8 against 4 at batch 8 on an
    # H100: Llama-3.2-1B 1.496 -> 1.456 ms a step, Qwen3-0.6B 1.562 -> 1.556 (BENCHMARKS.md).
    stream_k_splits: int = 8
    # a dense model's MLPs as one phase each at batch 1 on one rank (mlp_tiles); off by default: with its fixed-point
    # sums (bitwise reproducible) Qwen3-0.6B measured 1.148 ms a step against 1.073 unfused (H100, BENCHMARKS.md)
    fuse_mlp: bool = False
    # at batch 1 a phase that does not split K may take half-height weight blocks (gemv_blocks, gemv_tiles): on an H100
    # Llama-3.2-1B's q/k/v then runs 192 tiles of 4 loop steps, not 96 of 8, 1.158 -> 1.145 ms a step (BENCHMARKS.md)
    latency_tiles: bool = True
    # batch-1 GEMV tiles whose weight box fits the staging area copy it into shared memory before they wait, and
    # multiply from there (megagen.tasks.staging); GPU drivers only
    stage_weights: bool = True
    # at batch 1, where the o projection stages its weights, its tiles merge the attention's splits of their heads
    # themselves (megagen.tasks.linear.merge_gemv_residual), and the last split of each KV head no longer does: one
    # round trip less between the attention and o, for an o input of every split. On an H100 Qwen3-0.6B measured
    # 0.7580 -> 0.7383 ms a step (sampling 0.8199 -> 0.8098); Llama-3.2-1B, whose o tiles stream their weights and
    # form their input once a weight block, 1.0559 -> 1.0845 (BENCHMARKS.md, 2026-11-27)
    merge_in_o: bool = True
    # where every projection stages, gate/up takes as few, taller tiles as leave the o and down phases on either side
    # CTAs of their own (``wide_tiles``): a CTA that runs tiles of two consecutive phases reaches the second only
    # when the first is done, and only then starts copying its weights. Qwen3-0.6B's 192 gate/up tiles of 32 rows
    # (64 KB) left 56 of its 128 down tiles on such CTAs, done 1.9 us after the others (H100 profile); 128 tiles of 48
    # rows (96 KB) leave none: 0.7333 -> 0.7192 ms a step (H100, one process; BENCHMARKS.md, 2026-11-27).
    wide_gate_up: bool = True
    # where the projections stage, each phase starts its tiles' weight copies at this many bytes per SM cycle: a
    # phase of B weight bytes spreads its tiles' starts over B / rate cycles (``copy_spread``; 0: all at once). A
    # copy under way holds up every other load, store and fence of its SM until it lands (an o tile's release took
    # 3.2 us where its SM's other CTA had just started a 96 KB gate/up copy, 0.5 where it was 3 us old or more; H100
    # profiles), and a phase whose copies start at once gives every SM one. Qwen3-0.6B (H100, one process): gate/up
    # alone spread over 3,500 cycles 0.7079 ms a step; every phase at 3,600 bytes a cycle 0.6976, 1,800 0.6939
    # (BENCHMARKS.md, 2026-11-27)
    copy_issue_rate: int = dataclasses.field(default=1800, metadata={"least": 0})
    # a sparse layer on one rank routes before its o projection is done (trace.Layer.early_router): the router's
    # logits short of the post-attention norm's factor, which order the experts as the router's do, are a GEMV of
    # the stream before o (beside q/k/v) plus one of the attention's output (beside o) whose last tile picks the
    # experts (moe.router_route); moe.routing_weights computes the routing weights once o is done, beside the
    # experts' gate / up. So the router and the route no longer run after o, one phase each: Qwen3-30B-A3B's first
    # 8 layers 0.7201 -> 0.7072 ms a step (H100, BENCHMARKS.md, 2026-11-28)
    early_routing: bool = True
    # rows a tile of early routing's router_route takes. Its tiles follow o's in the order. None: o is tiled as one
    # phase with the router's rows, and the router's tiles fill the CTAs that leaves free, so o and the router end
    # together (Qwen3-30B-A3B: o 228 tiles of 36 rows x 1024, the router 16 of 8 x 4096). A number: o tiled alone,
    # and the router's tiles beyond the CTAs it leaves free queue behind o tiles. Qwen3-30B-A3B's 8 layers on an
    # H100 (BENCHMARKS.md, 2026-11-28): None 0.6864 ms a step, 2 rows 0.7108 (same run); earlier 4 rows 0.7092,
    # 2 rows 0.7072, 1 row 0.7090
    router_tile_rows: int | None = None
    # at batch 1, where the projections stream their weights (not staged), q/k/v and gate/up take weight blocks whose
    # rows divide their tiles' rows (``in_whole_row_blocks``): a tile's partial last row block takes as many loop
    # steps as a full one, each about a round trip, for fewer bytes. Qwen3-8B at tp=2 (gate/up tiles of 48 rows: 24
    # steps in 16 x 512 blocks instead of 32 in 32 x 256, 16 of them half empty) on two H200s: 3.061-3.072 -> 2.926-
    # 2.957 ms a step, gate/up 31.5 -> 28.9 us a layer streaming at 97% of the copy rate, not 86%; Qwen3-1.7B (the
    # same tiles) on one: 1.3799 -> 1.3658 (BENCHMARKS.md, 2026-11-28). It also changes, not measured, the gate/up
    # tiles of Qwen3-4B (80 rows), Mistral-7B-v0.3 and Llama-3.1-8B (112). Staged tiles multiply from shared memory,
    # where Qwen3-0.6B's 48-row gate/up measured faster in 32 x 256 blocks (``wide_tiles``).
    whole_row_blocks: bool = True

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if value is None and "None" in str(field.type):  # an optional setting left to its rule
                continue
            if field.type in (bool, "bool"):
                if not isinstance(value, bool):
                    raise MegagenError(f"{field.name} must be True or False, got {value!r}")
                continue
            least = field.metadata.get("least", 1)  # an int setting's least value: 1 unless its field says
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise MegagenError(f"{field.name} must be " + ("a positive int" if least == 1 else
                                                               f"an int of at least {least}") + f", got {value!r}")
        if self.batch_block_rows not in (16, 32, 64):
            raise MegagenError(f"batch_block_rows must be 16, 32 or 64, got {self.batch_block_rows!r}")

    def copy_spread(self, *weights: torch.Tensor) -> int:
        """SM cycles over which a staged phase of these weights starts its tiles' copies (``copy_issue_rate``)."""
        return round(sum(w.nbytes for w in weights) / self.copy_issue_rate) if self.copy_issue_rate else 0

    @classmethod
    def for_tp(cls, num_ctas: int, tp: int = 1, **options) -> "Tiling":
        """The tiling of a rank of a ``tp``-way model: ``options`` over the defaults, and from tp=4 on, unless
        ``options`` give block_n or block_k, ``TP_BLOCK`` weight blocks (a rank's projections are small, and
        shorter row blocks give every CTA work)."""
        if tp >= 4 and "block_n" not in options and "block_k" not in options:
            options.update(block_n=TP_BLOCK[0], block_k=TP_BLOCK[1])
        return cls(num_ctas, **options)

    def gemv_blocks(self, batch: int, split_k: bool) -> list[tuple[int, int]]:
        """The weight blocks (rows, columns) a GEMV phase may stream: the tiling's and, at batch 1 with
        ``latency_tiles`` for a phase that does not split K, blocks ever half as tall and twice as wide, down to
        MIN_BLOCK_ROWS rows (as many weights: as many bytes in flight and registers), which give a phase of few rows
        more tiles: a MoE router's 128 rows took 4 tiles of 8 loop steps. (A phase that splits K raises its tile
        count that way; half-height o and down tiles measured slower, BENCHMARKS.md.)"""
        blocks = [(self.block_n, self.block_k)]
        if batch == 1 and self.latency_tiles and not split_k and self.block_n >= 16:
            while blocks[-1][0] // 2 >= MIN_BLOCK_ROWS:
                blocks.append((blocks[-1][0] // 2, blocks[-1][1] * 2))
        return blocks

    def gemv_tiles(self, rows: list[int], k: int, batch: int, itemsize: int, split_k: bool,
                   align: int | None = None, max_splits: int = MAX_K_SPLITS,
                   max_rows: int | None = None, blocks: list[tuple[int, int]] | None = None) -> GemvTiles:
        """Rows per tile, K splits and weight block for a phase of GEMVs over the same K with these output rows.

        Each CTA runs its tiles one after another, so a phase takes its number of waves (tiles over CTAs,
        rounded up) times a tile's time. Candidates: rows per tile in steps of 4 up to ``max_tile_rows``
        (``max_rows`` if given), K splits into whole blocks where the output may be split-K partial sums, and
        the weight blocks of ``gemv_blocks`` (or ``blocks``). ``align``: the consumer's K chunk; tiles that
        divide it give each consumer tile one group counter to poll instead of a list of tiles (a long list
        measured 5-8 us of polling a phase, BENCHMARKS.md).

        A tile's time is the bytes it streams (a tile of fewer rows than a block waits on whole block loads, so
        it is costed as one block) plus TASK_OVERHEAD_BYTES. The blocks after the first (``gemv_blocks``: at
        batch 1) replace the first's best tiling only where ``_batch1_tile_us``, which tells a phase bound by
        its loop steps' round trips from one bound by bandwidth, puts their best ``BLOCK_SWITCH_GAIN`` lower.
        """
        splits = range(1, max_splits + 1 if split_k else 2)
        top = max_rows or self.max_tile_rows
        heights = sorted({top, *range(4, top + 1, 4)})
        aligned = [r for r in heights if align is None or align % r == 0] or heights

        def cost(t: GemvTiles, latency: bool) -> float:
            """The phase's time tiled as t: its waves times a tile's time (us, or bytes streamed)."""
            tiles = t.split * sum(cdiv(n, t.rows) for n in rows)
            if latency:
                tile = self._batch1_tile_us(t, k, min(tiles, self.num_ctas), itemsize)
            else:
                block_rows = Lin.block_shape(batch, t.block_n, t.block_k, self.batch_block_rows)[0]
                tile = max(t.rows, block_rows) * cdiv(k, t.split) * itemsize + TASK_OVERHEAD_BYTES
            return cdiv(tiles, self.num_ctas) * tile

        def best(block: tuple[int, int], latency: bool) -> GemvTiles:
            options = [GemvTiles(r, s, *block) for s in splits if self.split_k_blocks(k, s, batch, block)
                       for r in aligned]
            return min(options, key=lambda t: (cost(t, latency), t.split, -t.rows))

        first, *others = blocks or self.gemv_blocks(batch, split_k)
        choice = best(first, latency=False)
        for other in (best(block, latency=True) for block in others):
            if cost(other, True) <= (1 - BLOCK_SWITCH_GAIN) * cost(choice, True):
                choice = other
        return choice

    def in_whole_row_blocks(self, t: GemvTiles, k: int) -> GemvTiles:
        """Batch-1 tiles ``t`` of a phase over K = ``k`` that does not split K, in ``gemv_blocks``' half-height blocks
        (as many weights a block: as many bytes in flight) where those divide the tiles' rows, and K their columns, but
        ``t``'s blocks do not; else ``t``. Only one halving: each row block more ends in a reduction and a store, and
        the tiles of 68 or 76 rows that only 4-row blocks divide were not measured."""
        blocks = self.gemv_blocks(1, split_k=False)
        if t.rows % t.block_n == 0 or t.split != 1 or len(blocks) < 2:
            return t
        rows, cols = blocks[1]
        return t._replace(block_n=rows, block_k=cols) if t.rows % rows == 0 and k % cols == 0 else t

    def wide_tiles(self, rows: list[int], most: int, align: int) -> GemvTiles | None:
        """The batch-1 tiling, without K splits, of a phase of GEMVs with these output rows into at most
        ``most`` tiles of the fewest rows (a multiple of 4 that divides ``align``, the consumer's K chunk), in the
        tiling's weight blocks; None where no such tiling exists. (Qwen3-0.6B's 48-row gate/up tiles in 32 x 256
        blocks, the last half empty, measured 0.7362 ms a step against 0.7451 in 16 x 512 blocks: H100, another
        process of the same run; BENCHMARKS.md, 2026-11-27.)"""
        for height in range(4, align + 1, 4):
            if align % height == 0 and sum(cdiv(n, height) for n in rows) <= most:
                return GemvTiles(height, 1, self.block_n, self.block_k)
        return None

    def _batch1_tile_us(self, t: GemvTiles, k: int, active: int, itemsize: int) -> float:
        """A batch-1 GEMV tile's time in us, tiled as t over K = k, with ``active`` tiles streaming at once: a
        fixed cost, a cost per row block (its end reduces and stores, stalling the loads), and per loop step one
        block's round trip (latency-bound) or the step's share of the copy bandwidth (bandwidth-bound), whichever
        is longer. A phase of few tiles thus gains from more, shorter ones, where bytes alone call them equal."""
        block_k, chunk = self.split_k_blocks(k, t.split, batch=1, block=(t.block_n, t.block_k))
        row_blocks = cdiv(t.rows, t.block_n)
        steps = row_blocks * (chunk // block_k)
        step_bytes = t.rows * chunk * itemsize / steps
        step = max(STEP_LATENCY_US, active * step_bytes / (self.num_ctas * CTA_BYTES_PER_US))
        return TILE_US + row_blocks * ROW_BLOCK_END_US + steps * step

    def split_k_blocks(self, k: int, split: int, batch: int,
                       block: tuple[int, int] | None = None) -> tuple[int, int] | None:
        """``linear.split_k_blocks`` for ``block`` (the tiling's blocks if not given)."""
        block_n, block_k = block or (self.block_n, self.block_k)
        return Lin.split_k_blocks(k, split, batch, block_n, block_k, self.batch_block_rows)

    def mlp_tiles(self, inter: int) -> dict | None:
        """Tile shape of a fused MLP (``megagen.tasks.mlp``), or None where the two GEMV phases are faster.

        Fused only where one wave of 16-row tiles covers the intermediate size: there the two phases are
        bound by their fixed costs (a hop, a ramp, the stragglers), which fusing pays once. Measured on an
        H100 (BENCHMARKS.md): Qwen3-0.6B (192 tiles on 264 CTAs) 35-40 us a step faster with fp32 atomics, but
        75 us slower with the int64 fixed-point atomics that make it reproducible; Llama-3.2-1B (512 tiles, or
        fewer of 32 or 64 rows) 86 us or more slower, its phases already near their floor.
        Blocks hold as many weights as a GEMV block (as many bytes in flight): gate and up blocks of half its
        columns each, down blocks [BLOCK_H, 16]."""
        if not self.fuse_mlp or cdiv(inter, MLP_TILE_ROWS) > self.num_ctas:
            return None
        block = self.block_n * self.block_k
        return dict(I=MLP_TILE_ROWS, BLOCK_K=block // (2 * MLP_TILE_ROWS), BLOCK_H=block // MLP_TILE_ROWS)

    def attention_split_keys_for(self, key_bytes: int) -> int:
        """The fewest keys a split takes: ``attention_split_keys``, or where that is None as many as make
        ATTENTION_SPLIT_BYTES of cached keys and values (``key_bytes`` a key: its key and value rows)."""
        return self.attention_split_keys or max(1, ATTENTION_SPLIT_BYTES // key_bytes)

    def attention_splits(self, batch: int, kv_heads: int, max_keys: int, key_bytes: int) -> int:
        """Splits of each (batch row, KV head)'s cached keys: enough to give every CTA one, at most
        ``max_attention_splits``, and, as a power of two, no more than leave each split
        ``attention_split_keys_for(key_bytes)`` of the most keys a step can attend to (``max_keys``: the cache
        length or the sliding window). Every split costs a tile's fixed latency however few keys it gets, so a
        kernel built for short contexts runs fewer, longer splits (BENCHMARKS.md)."""
        by_keys = 1 << (max(1, max_keys // self.attention_split_keys_for(key_bytes)).bit_length() - 1)
        return max(1, min(self.max_attention_splits, self.num_ctas // (batch * kv_heads), by_keys))


def decode_graph(decoder, state: DecodeState, batch: int, tiling: Tiling, world: World | None = None,
                 allreduce: str = "auto", max_top_k: int | None = None) -> TaskGraph:
    """The graph of one decode step for the first ``batch`` rows of ``state``.

    ``decoder`` is the model, or rank ``decoder.rank``'s shard of it in ``world``; ``allreduce``:
    the form of the allreduce tasks ("auto", "one_shot" or "two_shot", see megagen.tasks.comm);
    ``max_top_k``: None picks the next token greedily, a power of two samples it with the settings in
    ``state`` (megagen.tasks.multinomial), ranking at most that many tokens a row.
    """
    dev, dt = decoder.device, decoder.dtype
    hidden = decoder.hidden_size
    world = EmulatedWorld(1, dev) if world is None else world
    rank, tp = decoder.rank, world.size
    suffix = f"_tp{tp}_rank{rank}" if tp > 1 else ""
    g = TaskGraph(f"{decoder.family.name}_decode_b{batch}{suffix}", world=world, rank=rank)
    g.input(state.tokens, state.pos, state.cos, state.sin, *state.k_cache, *state.v_cache, decoder.embed,
            decoder.lm_head, decoder.final_norm.weight)

    def act(*shape, dtype=dt):
        return torch.empty(shape, dtype=dtype, device=dev)

    def gemv_tiling(*weights, split_k=False, align=None, max_splits=MAX_K_SPLITS, blocks=None):
        """The tiling (``GemvTiles``) of GEMVs that form one phase (they run side by side)."""
        k = weights[0].shape[1]
        return tiling.gemv_tiles([w.shape[0] for w in weights], k, batch, weights[0].element_size(), split_k,
                                 align, max_splits, blocks=blocks)

    def lm_head_tiling(vocab):
        """(the lm_head's ``GemvTiles``, logits per argmax or sample_partial tile). At batch 1 one wave of lm_head
        tiles, each followed by an argmax (or sample_partial) tile of its rows (Qwen3-0.6B on an H100: 1.070 ->
        1.057 ms a step, BENCHMARKS.md), where tiles of at most max_tile_rows ran waves with a tile boundary (a drained load pipeline)
        each; in whole weight blocks, as a tile's masked last block takes a loop step as long as a full one. A
        batch's tiles are bound by their loop steps, which waves do not change, and an argmax tile per lm_head tile
        and batch row measured slower at batch 8 (Llama-3.2-1B 1.448 -> 1.463 ms): there argmax tiles take 4096
        logits and the lm_head tiles divide them."""
        if batch > 1:
            block = min(ARGMAX_ROWS, triton.next_power_of_2(vocab))
            return gemv_tiling(decoder.lm_head, align=block), block
        tiles = tiling.gemv_tiles([vocab], decoder.lm_head.shape[1], batch, decoder.lm_head.element_size(), False,
                                  max_rows=max(tiling.max_tile_rows, cdiv(vocab, tiling.num_ctas)))
        rows = min(cdiv(tiles.rows, tiles.block_n) * tiles.block_n, S.MAX_ARGMAX_ROWS)
        return tiles._replace(rows=rows), rows

    def linear(task, w, y, name, tiles: GemvTiles, spread: int = 0, **tensors):
        g.input(w)
        g.add(task, name=name, w=w, y=y, BLOCK_N=tiles.block_n, BLOCK_K=tiles.block_k, TILE_ROWS=tiles.rows,
              DOT_ROWS=tiling.batch_block_rows, stage=staged, COPY_SPREAD=spread if staged else 0, **tensors)
        return y

    def residual_linear(task, partial_task, w, name, residual, tiles: GemvTiles, **tensors):
        """A projection added to the residual stream: fused on one rank, through an allreduce across ranks."""
        n, k = w.shape
        if tp == 1:
            return linear(task, w, act(tiles.split, batch, n, dtype=torch.float32), name, tiles, tiling.copy_spread(w),
                          residual=residual, **tensors)
        part = world.symmetric(rank, (tiles.split, batch, n), torch.float32)
        linear(partial_task, w, part, name, tiles, tiling.copy_spread(w), **tensors)
        out = act(1, batch, n, dtype=torch.float32)
        allreduce_ops(g, f"{name}.allreduce", part, residual, out, ranks=tp, mode=allreduce)
        return out

    def experts_mlp(name, e, post, resid, early=None):
        """A sparse MLP block: router, routing, the routed experts' gate / up and down, their weighted sum.
        At batch 1 each routed slot is a GEMV of batch one (its own expert), tiled like a projection of that size; at
        batch > 1 each slot is one of the union of the rows' experts (``moe.expert_union``), a GEMV of every row.
        ``early``: early routing's logits (short of the norm's factor) and experts, made before o
        (``Tiling.early_routing``)."""
        g.input(e.router, e.gate_up, e.down)
        num, _, inter = e.down.shape
        slots = batch * e.top_k
        # The experts' GEMVs keep the tiling's blocks: others were not measured for them. The router's few rows take
        # gemv_blocks' narrower ones, if the cost says so: Qwen3-30B-A3B's 128 rows ran 4 tiles of 32 x 2048 in 8.2
        # us a layer (H100, BENCHMARKS.md).
        itemsize, own = e.down.element_size(), [(tiling.block_n, tiling.block_k)]
        weights = act(batch, e.top_k, dtype=e.weight_dtype)
        if early is None:
            logits = linear(Lin.rmsnorm_gemv, e.router, act(1, batch, num), f"{name}.router", gemv_tiling(e.router),
                            **post)
            ids = act(batch, e.top_k, dtype=torch.int64)
            g.add(Moe.route, name=f"{name}.route", logits=logits, ids=ids, weights=weights, RENORMALIZE=e.renormalize)
        else:
            ids = early["ids"]
        blocks = dict(BLOCK_N=tiling.block_n, BLOCK_K=tiling.block_k)
        # at batch > 1 the slots are the union of the rows' experts (expert_union), each a GEMV of every row, so an
        # expert two rows share is streamed once; a slot past the union streams nothing
        union = batch > 1
        rows_a_slot = batch if union else 1
        down_tiles = tiling.gemv_tiles([hidden] * slots, inter, rows_a_slot, itemsize, split_k=True, blocks=own)
        _, down_chunk = tiling.split_k_blocks(inter, down_tiles.split, rows_a_slot)
        rows = tiling.gemv_tiles([inter] * 2 * slots, hidden, rows_a_slot, itemsize, split_k=False, align=down_chunk,
                                 blocks=own).rows
        combine = dict(name=f"{name}.experts_combine", weights=weights, dtype=dt)
        if union:
            experts = act(slots, dtype=torch.int64)
            combine["slot_of"] = act(batch, e.top_k, dtype=torch.int64)
            g.add(Moe.expert_union, name=f"{name}.experts_union", ids=ids, slots=experts, slot_of=combine["slot_of"])
            gate, up = act(slots, batch, inter), act(slots, batch, inter)
            down = act(slots * down_tiles.split, batch, hidden, dtype=torch.float32)
        else:
            experts = ids
            gate, up = act(1, slots, inter), act(1, slots, inter)
            down = act(down_tiles.split, slots, hidden, dtype=torch.float32)
        for part, y, row0 in (("gate", gate, 0), ("up", up, inter)):  # an expert's gate rows, then its up rows
            g.add(Moe.expert_rmsnorm_gemv, name=f"{name}.experts_{part}", w=e.gate_up, ids=experts, y=y, row0=row0,
                  rows=inter, TILE_ROWS=rows, **blocks, **post)
        if early is not None:  # after gate / up in the order: on a CTA they leave free, off the path to down
            g.add(Moe.routing_weights, name=f"{name}.routing_weights", logits=early["logits"], residual=post["x"],
                  weights=weights, eps=post["eps"], RENORMALIZE=e.renormalize, dtype=dt)
        g.add(Moe.expert_silu_mul_gemv, name=f"{name}.experts_down", w=e.down, x=gate, x2=up, ids=experts, y=down,
              TILE_ROWS=down_tiles.rows, **blocks)
        combine["parts"] = down
        out = act(1, batch, hidden, dtype=torch.float32)
        if tp == 1:
            g.add(Moe.moe_combine_union_residual if union else Moe.moe_combine_residual, residual=resid, out=out,
                  **combine)
            return out
        part = world.symmetric(rank, (1, batch, hidden), torch.float32)  # as for a dense down projection
        g.add(Moe.moe_combine_union if union else Moe.moe_combine, out=part, **combine)
        allreduce_ops(g, f"{combine['name']}.allreduce", part, resid, out, ranks=tp, mode=allreduce)
        return out

    # every layer's MLP as one phase, or none: a fused MLP leaves the residual stream a fixed-point part, which
    # only the readers in FIXED_READERS take
    fused = (tp == 1 and batch == 1 and all(layer.experts is None and tiling.mlp_tiles(layer.intermediate_size)
                                            for layer in decoder.layers))
    resid = act(1, batch, hidden, dtype=torch.float32)
    resid_fixed = None  # the stream's fixed-point part, once a fused MLP has written one
    g.add(S.embedding, name="embed", tokens=state.tokens, table=decoder.embed, out=resid)

    def stream_reader(task):
        """``task``, or its form that also reads the stream's fixed-point part where there is one."""
        return task if resid_fixed is None else FIXED_READERS[task]

    def stream(x_name="x", **tensors):
        """The residual stream as input ``x_name`` of a reader, with its fixed-point part if any."""
        fixed = {} if resid_fixed is None else {f"{x_name}_fixed": resid_fixed}
        return {x_name: resid, **fixed, **tensors}

    # the RMSNorms as ops of their own (a fused MLP's fixed-point part, batch 1 only, is read by the fused forms)
    norm_phase = batch >= tiling.norm_phase_min_batch and not fused
    # the o and down projections may split K further where only norm ops read all their partial sums: on one rank
    # (an allreduce reads every part) and before a dense MLP (a sparse one's router and experts fuse the norm)
    stream_splits = tiling.stream_k_splits if norm_phase and tp == 1 else MAX_K_SPLITS

    def router_tiles(w_a, o: GemvTiles) -> GemvTiles:
        """The tiles of early routing's ``router_route`` over the attention's output, which follow o's in the order:
        round robin puts them on the CTAs o leaves free (o was tiled with the router's rows, so there are some),
        tiled for as many CTAs; ``Tiling.router_tile_rows`` rows a tile if set, any beyond the free CTAs queued
        behind o tiles."""
        if tiling.router_tile_rows is not None:
            return gemv_tiling(w_a)._replace(rows=tiling.router_tile_rows)
        free = tiling.num_ctas - o.split * cdiv(hidden, o.rows)
        over = dataclasses.replace(tiling, num_ctas=free) if free > 0 else tiling
        return over.gemv_tiles([w_a.shape[0]], w_a.shape[1], batch, w_a.element_size(), split_k=False)

    def routes_early(layer) -> bool:
        """Whether a layer picks its experts beside its o projection (``Tiling.early_routing``)."""
        return tiling.early_routing and layer.experts is not None and tp == 1 and layer.attn.o.bias is None

    def projection_tiles(layer) -> dict:
        """The ``GemvTiles`` of a layer's projections by name: q/k/v (one phase), o and, for a dense MLP, gate/up (one
        phase, aligned to down's K chunks) and down; where the layer routes early, o is tiled as one phase with the
        router's rows over the attention's output, unless ``Tiling.router_tile_rows`` sets the router's tiles."""
        a = layer.attn
        # the attention sums q/k/v's split-K partial sums itself (a split-K GEMV takes no bias)
        split_qkv = batch > 1 and hidden >= tiling.qkv_split_min_k and all(p.bias is None for p in (a.q, a.k, a.v))
        qkv = gemv_tiling(a.q.weight, a.k.weight, a.v.weight, split_k=split_qkv)
        o_rows = [hidden]
        if routes_early(layer) and tiling.router_tile_rows is None:
            o_rows.append(layer.experts.router.shape[0])
        o_splits = MAX_K_SPLITS if fused or layer.experts is not None else stream_splits
        o = tiling.gemv_tiles(o_rows, a.o.weight.shape[1], batch, a.o.weight.element_size(), True, None, o_splits)
        tiles = dict(q=qkv, k=qkv, v=qkv, o=o)
        if layer.experts is None:
            inter = layer.gate.weight.shape[0]
            tiles["down"] = down = gemv_tiling(layer.down.weight, split_k=True, max_splits=stream_splits)
            _, down_chunk = tiling.split_k_blocks(inter, down.split, batch, (down.block_n, down.block_k))
            tiles["gate"] = tiles["up"] = gemv_tiling(layer.gate.weight, layer.up.weight, align=down_chunk)
        return tiles

    def stages_every_projection() -> bool:
        """Whether every layer's every GEMV can stage its weights (``megagen.tasks.staging``). Staging takes shared
        memory from the L1 cache, which slows the phases that do not stage: on an H100 Llama-3.2-1B, whose q/k/v
        and o stage but not its MLP, measured 1.076 -> 1.133 ms a step, where Qwen3-0.6B, all of whose projections
        stage, measured 0.915 -> 0.868 (BENCHMARKS.md). So a build stages all of them or none."""
        if not tiling.stage_weights or fused or any(layer.experts is not None for layer in decoder.layers):
            return False
        for layer, tiling_of in zip(decoder.layers, layer_tiles):
            weights = dict(q=layer.attn.q, k=layer.attn.k, v=layer.attn.v, o=layer.attn.o, gate=layer.gate,
                           up=layer.up, down=layer.down)
            for name, tiles in tiling_of.items():
                w = weights[name].weight
                _, chunk = tiling.split_k_blocks(w.shape[1], tiles.split, batch, (tiles.block_n, tiles.block_k))
                if not Lin.stage_bytes(w, batch, tiles.rows, chunk):
                    return False
        return True

    def widen_gate_up(layer, tiles: dict) -> None:
        """Where gate/up shares CTAs with the o or down phase (``Tiling.wide_gate_up``), taller gate/up tiles, if
        some that still stage leave o and down CTAs of their own."""
        gate_up, o, down = (tiles[name] for name in ("gate", "o", "down"))
        count = {name: t.split * cdiv(n, t.rows) for name, t, n in (("o", o, hidden), ("down", down, hidden))}
        most = tiling.num_ctas - max(count.values())
        inter = layer.gate.weight.shape[0]
        if 2 * cdiv(inter, gate_up.rows) <= most:
            return
        _, down_chunk = tiling.split_k_blocks(inter, down.split, batch, (down.block_n, down.block_k))
        wide = tiling.wide_tiles([inter, inter], most, down_chunk)
        if wide and all(Lin.stage_bytes(w, batch, wide.rows, hidden) for w in (layer.gate.weight, layer.up.weight)):
            tiles["gate"] = tiles["up"] = wide

    def o_merges_heads(a, tiles: GemvTiles) -> bool:
        """Whether the o projection (``tiles``) can merge the attention's splits itself: batch 1, and weight blocks
        and K chunks of whole heads."""
        block_k, chunk = Lin.split_k_blocks(a.o.weight.shape[1], tiles.split, batch, tiles.block_n, tiles.block_k,
                                            tiling.batch_block_rows)
        return batch == 1 and block_k % a.head_dim == 0 and chunk % a.head_dim == 0

    layer_tiles = [projection_tiles(layer) for layer in decoder.layers]
    staged = stages_every_projection()
    if tiling.whole_row_blocks and batch == 1 and not staged:
        for tiles in layer_tiles:
            for name in ("q", "k", "v", "gate", "up"):
                if name in tiles:  # a sparse layer's experts keep the tiling's blocks (experts_mlp)
                    tiles[name] = tiling.in_whole_row_blocks(tiles[name], hidden)
    if staged and tiling.wide_gate_up:
        for layer, tiles in zip(decoder.layers, layer_tiles):
            widen_gate_up(layer, tiles)

    def normed(name, norm):
        """GEMVs of the residual stream RMS-normalised by ``norm``: a function from a norm-fusing GEMV task to the
        task to add and its inputs, the norm fused in or, where it is an op of its own (``norm_phase``, added
        here), the plain GEMV reading its rows."""
        if not norm_phase:
            inputs = stream(norm_w=norm.weight, eps=norm.eps)
            return lambda task: (stream_reader(task), inputs)
        out = act(1, batch, hidden, dtype=norm.weight.dtype)
        g.add(Norm.rmsnorm, name=name, x=resid, norm_w=norm.weight, out=out, eps=norm.eps)
        return lambda task: (NORMED_READERS[task], dict(x=out))

    for i, layer in enumerate(decoder.layers):
        a = layer.attn
        g.input(layer.input_norm.weight, layer.post_norm.weight)
        reader = normed(f"L{i}.input_norm", layer.input_norm)
        proj, tiles = {}, layer_tiles[i]
        merge_in_o = tiling.merge_in_o and staged and not fused and o_merges_heads(a, tiles["o"])
        early = None  # early routing (Tiling.early_routing): the logits' part from the stream before o comes first
        if routes_early(layer) and not merge_in_o:
            w_x, w_a = layer.early_router
            g.input(w_x, w_a)
            num = w_x.shape[0]
            part = linear(Lin.gemv, w_x, act(1, batch, num, dtype=torch.float32), f"L{i}.router_x", gemv_tiling(w_x),
                          x=resid)
            early = dict(logits=act(1, batch, num, dtype=torch.float32),
                         ids=act(batch, layer.experts.top_k, dtype=torch.int64))
        qkv_spread = tiling.copy_spread(a.q.weight, a.k.weight, a.v.weight)  # q, k and v run as one phase
        for name, lin, heads in (("q", a.q, a.heads), ("k", a.k, a.kv_heads), ("v", a.v, a.kv_heads)):
            qkv = tiles[name]
            y = act(qkv.split, batch, heads * a.head_dim, dtype=dt if qkv.split == 1 else torch.float32)
            bias = {} if lin.bias is None else {"bias": lin.bias}
            g.input(*bias.values())
            task, inputs = reader(Lin.rmsnorm_gemv_bias if bias else Lin.rmsnorm_gemv)
            proj[name] = linear(task, lin.weight, y, f"L{i}.{name}_proj", qkv, qkv_spread, **bias, **inputs)

        max_keys = min(state.k_cache[i].shape[2], a.window or state.k_cache[i].shape[2])
        key_bytes = 2 * a.head_dim * state.k_cache[i].element_size()
        splits = tiling.attention_splits(batch, a.kv_heads, max_keys, key_bytes)
        o_part = act(batch, a.heads, splits, a.head_dim, dtype=torch.float32)
        ml_part = act(batch, a.heads, splits, 2, dtype=torch.float32)
        cache = dict(k_cache=state.k_cache[i], v_cache=state.v_cache[i])
        # the splits merged by the o projection, or by the last split of each KV head into ``out``
        merged = {} if merge_in_o else dict(out=act(1, batch, a.heads * a.head_dim))
        task, norms = A.split_attention if merge_in_o else A.attention, {}
        if a.q_norm is not None:
            g.input(a.q_norm.weight, a.k_norm.weight)
            task = A.qk_norm_split_attention if merge_in_o else A.qk_norm_attention
            norms = dict(q_norm_w=a.q_norm.weight, k_norm_w=a.k_norm.weight, q_eps=a.q_norm.eps, k_eps=a.k_norm.eps)
        g.add(task, name=f"L{i}.attention", q=proj["q"], k=proj["k"], v=proj["v"], cos=state.cos, sin=state.sin,
              pos=state.pos, o_part=o_part, ml_part=ml_part, scale=a.scaling, window=a.window or 0,
              BLOCK_S=tiling.attention_block, **merged, **cache, **norms)
        if fused:
            # o's partial sums and the fixed-point part the fused MLP accumulates (o clears it): the next residual
            # stream is both
            o_tiles = tiles["o"]
            h, mlp = act(o_tiles.split, batch, hidden, dtype=torch.float32), act(1, batch, hidden, dtype=torch.int64)
            linear(stream_reader(Lin.gemv_residual_zero), a.o.weight, h, f"L{i}.o_proj", o_tiles, x=merged["out"],
                   zero=mlp, **stream("residual"))
            # the down weights column-major: a tile's 16 columns are 16 rows of memory, where the model's
            # layout gives 32 bytes of every row (measured 190 us a step slower for Qwen3-0.6B)
            g.input(layer.gate.weight, layer.up.weight, layer.down.columns)
            g.add(Mlp.rmsnorm_mlp, name=f"L{i}.mlp", gate_w=layer.gate.weight, up_w=layer.up.weight,
                  down_w=layer.down.columns, x=h, norm_w=layer.post_norm.weight, eps=layer.post_norm.eps, y=mlp,
                  **tiling.mlp_tiles(layer.intermediate_size))
            resid, resid_fixed = h, mlp
            continue
        if merge_in_o:
            resid = residual_linear(Lin.merge_gemv_residual, Lin.merge_gemv, a.o.weight, f"L{i}.o_proj", resid,
                                    tiles["o"], x=o_part, x2=ml_part)
        else:
            resid = residual_linear(Lin.gemv_residual, Lin.gemv, a.o.weight, f"L{i}.o_proj", resid, tiles["o"],
                                    x=merged["out"])
        if early is not None:  # the attention's part added to the stream's, and the experts, beside o
            router = router_tiles(w_a, tiles["o"])
            linear(Moe.router_route, w_a, early["logits"], f"L{i}.router_a", router, x=merged["out"], residual=part,
                   ids=early["ids"])

        if layer.experts is not None:
            post = dict(x=resid, norm_w=layer.post_norm.weight, eps=layer.post_norm.eps)
            resid = experts_mlp(f"L{i}", layer.experts, post, resid, early)
            continue
        inter = layer.gate.weight.shape[0]
        task, post = normed(f"L{i}.post_norm", layer.post_norm)(Lin.rmsnorm_gemv)
        spread = tiling.copy_spread(layer.gate.weight, layer.up.weight)
        gate = linear(task, layer.gate.weight, act(1, batch, inter), f"L{i}.gate_proj", tiles["gate"], spread, **post)
        up = linear(task, layer.up.weight, act(1, batch, inter), f"L{i}.up_proj", tiles["up"], spread, **post)
        resid = residual_linear(Lin.silu_mul_gemv_residual, Lin.silu_mul_gemv, layer.down.weight, f"L{i}.down_proj",
                                resid, tiles["down"], x=gate, x2=up)

    vocab = decoder.lm_head.shape[0]  # this rank's slice of the vocabulary
    task, final = normed("final_norm", decoder.final_norm)(Lin.rmsnorm_gemv)
    tiles, block = lm_head_tiling(vocab)
    blocks = cdiv(vocab, block)
    # sampling's pick reads every rank's logits where ties at the top-k value lie past every list
    logits = act(1, batch, vocab) if max_top_k is None else world.symmetric(rank, (1, batch, vocab), dt)
    linear(task, decoder.lm_head, logits, "lm_head", tiles, **final)
    value = world.symmetric(rank, (batch, blocks), torch.float32)  # every rank's best per block,
    index = world.symmetric(rank, (batch, blocks), torch.int64)  # read by every rank's pick
    if max_top_k is None:
        g.add(S.argmax_partial, name="argmax", logits=logits, value=value, index=index, offset=decoder.vocab_offset,
              valid=decoder.vocab_valid, ROWS=block)
        g.add(S.greedy_pick, name="next_token", value=value, index=index, tokens=state.tokens, pos=state.pos)
        return g
    settings = dict(seed=state.seed, temperature=state.temperature, top_k=state.top_k)
    g.input(*settings.values(), state.top_p)
    cand = world.symmetric(rank, (batch, blocks, max_top_k), torch.int64)  # every block's best keys, read by all
    g.add(M.sample_partial, name="sample", logits=logits, pos=state.pos, cand=cand, value=value, index=index,
          offset=decoder.vocab_offset, valid=decoder.vocab_valid, BLOCK=block, **settings)
    # one pick tile for every row: it advances the positions, and one tile waits for their readers as whole ops
    # (see sampling.greedy_pick)
    g.add(M.sample_pick, name="next_token", logits=logits, cand=cand, value=value, index=index, top_p=state.top_p,
          tokens=state.tokens, pos=state.pos, vocab=decoder.vocab_size, ROWS=triton.next_power_of_2(batch), **settings)
    return g
