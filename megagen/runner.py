"""megagen.build(model): a HuggingFace causal LM decoding one MegaKernel launch per token."""
from __future__ import annotations

import dataclasses

import torch

from megagen.backend import interpreting, num_sms
from megagen.decode import DecodeState, Tiling, decode_graph
from megagen.errors import MegagenError, check_options
from megagen.generation import GREEDY, SAMPLING_OPTIONS, Sampling, refuse_settings, resolve
from megagen.runtime import INTERPRETER_VIRTUAL_CTAS, MegaKernel, kernel_option_names
from megagen.shard import check_divisible, kv_heads_of, shard
from megagen.tasks.multinomial import MAX_TOP_K, draw
from megagen.trace import trace
from megagen.world import World, make_world

MAX_BATCH_SIZE = 8
# generation_config settings, with the values under which greedy generate is a plain argmax per step
_PLAIN_GREEDY = {"repetition_penalty": (None, 1.0), "no_repeat_ngram_size": (None, 0), "bad_words_ids": (None,),
                 "suppress_tokens": (None,), "begin_suppress_tokens": (None,), "min_new_tokens": (None, 0),
                 "min_length": (None, 0), "forced_bos_token_id": (None,), "forced_eos_token_id": (None,),
                 "sequence_bias": (None,), "encoder_repetition_penalty": (None, 1.0)}
DEFAULT_MAX_SEQ_LEN = 4096
CTAS_PER_SM = 2
BUILD_OPTIONS = ("tp", "scheduler", "max_seq_len", "max_batch_size", "world", "allreduce", "max_top_k")
# Tokens a row the sampler ranks by default: HuggingFace's default top_k (50) fits
DEFAULT_MAX_TOP_K = 64
# every Tiling setting but the CTA count (the kernel's num_ctas) is a build option: a setting added to Tiling is one
TILING_OPTIONS = tuple(f.name for f in dataclasses.fields(Tiling) if f.name != "num_ctas")


class Runner:
    """Generation for a traced model; one MegaKernel per batch size, greedy or sampling, built on first use.

    ``graph``, ``task_graph``, ``schedule``, ``source`` and ``source_path`` describe the kernel used last
    (greedy batch 1 right after ``build``; under tensor parallelism, of the first rank this process runs). At
    tp=1 the runner reads the model's weights in place: do not move or replace them while the runner is in use.
    Under tensor parallelism ``world`` holds the ranks; call ``close()`` when done.
    """

    def __init__(self, decoder, *, world: World, scheduler, max_seq_len: int, max_batch_size: int, tiling: Tiling,
                 allreduce: str, max_top_k: int, kernel_options: dict):
        self.decoder = decoder
        self.model = decoder.model
        self.world = world
        self.max_seq_len = max_seq_len
        self.max_batch_size = max_batch_size
        self.scheduler = scheduler
        self.tiling = tiling
        self.allreduce = allreduce
        self.max_top_k = max_top_k
        self._kernel_options = kernel_options
        # one shard and one decode state per rank this process runs
        self.shards = [decoder] if world.size == 1 else [shard(decoder, r, world.size) for r in world.ranks]
        self.states = [DecodeState.allocate(d, max_batch_size, max_seq_len) for d in self.shards]
        self._kernels: dict[tuple[int, bool], MegaKernel] = {}  # by (batch, sample)
        self._logits: dict[tuple[int, bool], list[torch.Tensor]] = {}
        self.kernel(1)  # batch 1 now, so graph, schedule and source exist right after build

    @property
    def tp(self) -> int:
        return self.world.size

    def close(self) -> None:
        """Release the world (NVSHMEM and the process group under torchrun); bounded in time."""
        self.world.close()

    @property
    def state(self) -> DecodeState:
        """The decode state of the first rank this process runs (tokens and positions agree on every rank)."""
        return self.states[0]

    # -- the kernels ---------------------------------------------------------------------------
    def kernel(self, batch: int, sample: bool = False) -> MegaKernel:
        """The MegaKernel of one decode step for ``batch`` rows (built and cached on first use); ``sample``: the
        next token drawn with the settings in the decode state (``DecodeState.set_sampling``), not the argmax."""
        if not 1 <= batch <= self.max_batch_size:
            raise MegagenError(f"batch size {batch} is outside 1..{self.max_batch_size} (max_batch_size); "
                               f"build with max_batch_size={batch} (at most {MAX_BATCH_SIZE})")
        key = (batch, sample)
        if key not in self._kernels:
            graphs = [decode_graph(d, st, batch, self.tiling, self.world, self.allreduce,
                                   self.max_top_k if sample else None) for d, st in zip(self.shards, self.states)]
            self._kernels[key] = MegaKernel(graphs, self.scheduler, world=self.world, num_ctas=self.tiling.num_ctas,
                                            **self._kernel_options)
            self._logits[key] = [next(op for op in g.ops if op.name == "lm_head").tensors["y"][0] for g in graphs]
        self._last = self._kernels[key]
        return self._last

    @property
    def task_graph(self):
        return self._last.task_graph

    @property
    def graph(self):
        """Op-level networkx DiGraph of the decode step."""
        return self._last.graph

    @property
    def schedule(self):
        return self._last.schedule

    @property
    def source(self) -> str:
        return self._last.source

    @property
    def source_path(self):
        return self._last.source_path

    def logits(self, batch: int, sample: bool = False) -> torch.Tensor:
        """The last decode step's logits [batch, vocab] (of the greedy or the ``sample`` kernel): a view of the
        kernel's buffer at tp=1; under tensor parallelism gathered from every rank's slice of the vocabulary (a
        collective under torchrun)."""
        key = (batch, sample)
        if key not in self._logits:
            self.kernel(batch, sample)
        if self.tp == 1:
            return self._logits[key][0]
        # ranks hold ascending slices, zero-padded only past the end of the vocabulary
        return torch.cat(self.world.gather(self._logits[key]), 1)[:, :self.decoder.vocab_size]

    # -- generation ----------------------------------------------------------------------------
    def _check_input(self, input_ids, max_new_tokens: int) -> torch.Tensor:
        if not isinstance(input_ids, torch.Tensor) or input_ids.dtype not in (torch.int64, torch.int32):
            raise MegagenError("input_ids must be an integer torch.Tensor of token ids, shape [batch, length]")
        if input_ids.dim() == 1:
            input_ids = input_ids[None]
        if input_ids.dim() != 2 or input_ids.shape[1] == 0:
            raise MegagenError(f"input_ids must be [batch, length] with length >= 1; got {tuple(input_ids.shape)}")
        batch, length = input_ids.shape
        if batch > self.max_batch_size:
            raise MegagenError(f"a batch of {batch} is more than max_batch_size={self.max_batch_size}; "
                               f"build with a larger max_batch_size (at most {MAX_BATCH_SIZE})")
        if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise MegagenError(f"max_new_tokens must be a positive int, got {max_new_tokens!r}")
        if length + max_new_tokens > self.max_seq_len:
            raise MegagenError(f"the prompt ({length} tokens) plus {max_new_tokens} new tokens exceeds "
                               f"max_seq_len={self.max_seq_len}; build with a larger max_seq_len")
        self._check_generation_config()
        lo, hi = int(input_ids.min()), int(input_ids.max())
        if lo < 0 or hi >= self.decoder.vocab_size:
            bad = lo if lo < 0 else hi
            raise MegagenError(f"input_ids holds token id {bad}, outside the vocabulary 0..{self.decoder.vocab_size - 1}")
        return input_ids.to(device=self.decoder.device, dtype=torch.int64)

    def _check_generation_config(self):
        """Refuse generation settings under which model.generate's scores are not the plain logits."""
        refuse_settings(self.model.generation_config, _PLAIN_GREEDY, "megagen picks tokens from the plain logits",
                        "repetition_penalty = 1.0")

    @torch.no_grad()
    def prefill(self, input_ids: torch.Tensor, sampling: Sampling = GREEDY) -> torch.Tensor:
        """Run the prompt through the HuggingFace model, fill the KV cache, set tokens and positions; the first
        new token is the argmax, or drawn as the sampling tasks draw (key: the prompt's last position).

        Returns the prompt's last logits [batch, vocab]."""
        from transformers import DynamicCache
        batch, length = input_ids.shape
        out = self.model(input_ids=input_ids, past_key_values=DynamicCache(), use_cache=True, logits_to_keep=1)
        logits = out.logits[:, -1]
        if sampling.do_sample:
            rows = torch.arange(batch, device=logits.device)
            first = draw(logits, sampling.seed, torch.full_like(rows, length - 1), rows, sampling.temperature,
                         sampling.top_k, sampling.top_p)
        else:
            first = logits.argmax(-1)
        kv_heads = self.decoder.layers[0].attn.kv_heads
        for rank, state in zip(self.world.ranks, self.states):
            heads = kv_heads_of(rank, self.tp, kv_heads)  # each rank caches its own KV heads
            for i, layer in enumerate(out.past_key_values.layers):
                state.k_cache[i][:batch, :, :length] = layer.keys[:, heads.start:heads.stop]
                state.v_cache[i][:batch, :, :length] = layer.values[:, heads.start:heads.stop]
            state.tokens[:batch] = first
            state.pos[:batch] = length
        return logits

    @torch.no_grad()
    def generate(self, input_ids: torch.Tensor, max_new_tokens: int | None = None, *, return_logits: bool = False,
                 streamer=None, **options):
        """Generation as ``model.generate(input_ids, max_new_tokens=N, ...)``: greedy, or with ``do_sample=True``
        a draw from HuggingFace's distribution (``temperature``, ``top_k``, ``top_p``; each setting the call does
        not pass comes from the model's ``generation_config``, else HuggingFace's defaults, as HuggingFace takes
        them). The draw happens in the MegaKernel, keyed by a seed taken from torch's default generator, so
        ``torch.manual_seed(s)`` before two calls gives the same tokens (at any tp); top_k is at most the
        ``max_top_k`` built with (HuggingFace's default 50 fits), and top_p < 1 needs a top_k.

        Returns prompt plus new tokens [batch, length + new] (after end-of-sequence, a row gets the
        pad token and generation stops once every row has ended, as HuggingFace does). With
        ``return_logits`` also the logits of every new token [batch, new, vocab]: the first from
        the prefill, the others from the MegaKernel. ``streamer``: HuggingFace's streamer interface
        (``put``, ``end``; ``transformers.TextStreamer`` works as it is), given the prompt and then
        each step's tokens as the step finishes. Launches are queued without waiting for each
        other; every EOS_CHECK_EVERY steps (every step with a streamer) the new tokens are read,
        so generation stops at most that many launches after every row has ended."""
        check_options("generate", options, ("max_new_tokens", "return_logits", "streamer") + SAMPLING_OPTIONS)
        if streamer is not None and not all(callable(getattr(streamer, m, None)) for m in ("put", "end")):
            raise MegagenError(f"streamer must have put(token_ids) and end() methods, as transformers.TextStreamer "
                               f"has; got {type(streamer).__name__}")
        sampling = resolve(self.model.generation_config, options, vocab_size=self.decoder.vocab_size,
                           max_top_k=self.max_top_k)
        input_ids = self._check_input(input_ids, max_new_tokens)
        batch = input_ids.shape[0]
        kernel = self.kernel(batch, sampling.do_sample)
        if sampling.do_sample:
            sampling = dataclasses.replace(sampling, seed=self._shared_seed())
            for state in self.states:
                state.set_sampling(sampling)
        first = self.prefill(input_ids, sampling)
        if streamer is not None:
            streamer.put(input_ids.cpu())
        end = _EndOfSequence(self.model.generation_config, batch)
        pending, new, logits = [], [], [first]  # tokens not yet read; read and padded; per-step logits
        for step in range(max_new_tokens):
            if step:
                kernel.run(check=False)
                if return_logits:
                    logits.append(self.logits(batch, sampling.do_sample).clone())
            pending.append(self.state.tokens[:batch].clone())
            if streamer is not None or len(pending) == EOS_CHECK_EVERY or step == max_new_tokens - 1:
                for tokens in torch.stack(pending, 1).cpu().unbind(1):  # one wait for the device
                    new.append(end.pad(tokens))
                    if streamer is not None:
                        streamer.put(new[-1])
                    if end.done:
                        break
                pending.clear()
                if end.done:
                    break
        kernel.check()
        if streamer is not None:
            streamer.end()
        sequences = torch.cat([input_ids, torch.stack(new, 1).to(input_ids.device)], 1)
        if not return_logits:
            return sequences
        return sequences, torch.stack(logits[:len(new)], 1).to(first.dtype)


    def _shared_seed(self) -> int:
        """A seed from torch's default generator (as HuggingFace's draws use it), rank 0's on every rank."""
        seed = torch.randint(0, 2 ** 63 - 1, (1,), dtype=torch.int64).to(self.world.device)
        return int(self.world.gather([seed])[0])


# Steps between reads of the generated tokens when nothing streams them: an early stop costs at most this many
# launches past the end, and the launches in between queue up without a wait on the device.
EOS_CHECK_EVERY = 8


class _EndOfSequence:
    """HuggingFace's end-of-sequence rule, step by step: after its eos token a row gets the pad token (eos when
    the config has none), and generation ends once every row has ended."""

    def __init__(self, generation_config, batch: int):
        eos = generation_config.eos_token_id
        self.eos = None if eos is None else torch.tensor([eos] if isinstance(eos, int) else list(eos))
        pad = generation_config.pad_token_id
        self.pad_id = pad if pad is not None or self.eos is None else int(self.eos[0])
        self.ended = torch.zeros(batch, dtype=torch.bool)

    def pad(self, tokens: torch.Tensor) -> torch.Tensor:
        """One step's tokens [batch] (on the CPU) as HuggingFace returns them; records the rows that end."""
        if self.eos is None:
            return tokens
        out = torch.where(self.ended, torch.full_like(tokens, self.pad_id), tokens)
        self.ended |= torch.isin(tokens, self.eos)
        return out

    @property
    def done(self) -> bool:
        return self.eos is not None and bool(self.ended.all())


def build(model, tp: int = 1, scheduler=None, max_seq_len: int | None = None, max_batch_size: int = 1, *,
          world=None, allreduce: str = "auto", max_top_k: int = DEFAULT_MAX_TOP_K, **kernel_options) -> Runner:
    """Trace ``model`` (a transformers causal LM), build its decode MegaKernel, and return a Runner.

    ``tp``: tensor-parallel ranks. Under ``torchrun --nproc-per-node tp`` every process calls build
    with its model on its GPU (cuda:LOCAL_RANK), the same weights everywhere, and runs the same calls;
    megagen shards the model (``megagen.shard``) and starts NVSHMEM. ``world="emulated"`` runs all
    ``tp`` ranks in this process instead (CPU tests, debugging). ``allreduce``: "auto", "one_shot" or
    "two_shot" (``megagen.tasks.comm``). ``max_top_k``: the largest top_k generate(do_sample=True) takes
    (a power of two up to 256; 64).
    ``scheduler``: "round_robin" (default), "zigzag", "work_queue" or a Scheduler. ``max_seq_len``:
    KV-cache length (default: the model's max_position_embeddings, at most 4096). Tiling options:
    ``block_n`` / ``block_k`` (batch-1 GEMV weight blocks: 32 x 256, from tp=4 on 8 x 512), ``max_tile_rows`` (a
    projection's rows per tile are chosen to fill whole waves of CTAs, up to this many, or at batch 1 as many as
    one wave of lm_head tiles needs; 128), ``attention_block``
    (positions per attention step),
    ``max_attention_splits`` and ``attention_split_keys`` (each (row, KV head)'s cache is split over up to
    ``max_attention_splits`` tiles, 32, each taking at least ``attention_split_keys`` of max_seq_len's keys, by
    default as many as make 16 KB of cached keys and values: 32 keys of 128-wide bf16 heads, 64 of 64-wide; so a
    smaller max_seq_len builds a kernel for short contexts), ``qkv_split_min_k`` (at batch > 1, q/k/v may split K over a hidden size
    at least this large, the attention adding their partial sums; 2048), ``norm_phase_min_batch`` (from this
    batch on, the RMSNorms before q/k/v, gate/up and the lm_head are ops of their own; 2), ``batch_block_rows``
    (a batch's GEMV weight blocks are at least this many rows: 16, 32 or 64; 64), ``stream_k_splits`` (the most K
    splits of the o and down projections where the norms are ops of their own; 8), ``fuse_mlp`` (a dense MLP as
    one phase at batch 1 on one rank where one wave of tiles covers it, its down projection's partial sums added
    as fixed-point atomics; False, measured slower), ``latency_tiles`` (at batch 1 a phase that does not split K
    may take blocks half as tall and twice as wide, where a cost of loop-step round trips predicts it much faster;
    True), ``stage_weights`` (batch-1 GEMV tiles whose weights fit copy them into shared memory before they wait,
    megagen.tasks.staging; True), ``merge_in_o`` (at batch 1, where the o projection stages, its tiles merge the
    attention's splits themselves instead of the last split of each KV head; True), ``wide_gate_up`` (where every
    projection stages, gate/up takes as few, taller tiles as leave the o and down phases CTAs of their own; True),
    ``copy_issue_rate`` (where the projections stage, each phase starts its tiles' weight copies at this many bytes
    per SM cycle, so a copy under way holds up few of its SM's other loads and stores; 1800, 0 for all at once),
    ``early_routing`` (a mixture-of-experts layer on one rank picks its experts beside the o projection, from the
    stream before o and the attention's output; True), ``router_tile_rows`` (the rows of its router tiles; None: o
    and the router tiled as one phase). Other keyword arguments go to MegaKernel (num_ctas: two per SM, shared by
    the ranks of an emulated world on a GPU; num_warps, profile, ...). Errors are raised before anything compiles or
    any rank starts.
    """
    check_options("megagen.build", kernel_options, BUILD_OPTIONS + TILING_OPTIONS + kernel_option_names())
    if not isinstance(max_batch_size, int) or not 1 <= max_batch_size <= MAX_BATCH_SIZE:
        raise MegagenError(f"max_batch_size must be an int in 1..{MAX_BATCH_SIZE}, got {max_batch_size!r}")
    if allreduce not in ("auto", "one_shot", "two_shot"):
        raise MegagenError(f"allreduce must be 'auto', 'one_shot' or 'two_shot', got {allreduce!r}")
    if (not isinstance(max_top_k, int) or isinstance(max_top_k, bool) or not 1 <= max_top_k <= MAX_TOP_K
            or max_top_k & (max_top_k - 1)):
        raise MegagenError(f"max_top_k must be a power of two up to {MAX_TOP_K}, got {max_top_k!r}")
    decoder = trace(model)
    check_divisible(decoder, tp)
    limit = getattr(model.config, "max_position_embeddings", None) or DEFAULT_MAX_SEQ_LEN
    max_seq_len = min(limit, DEFAULT_MAX_SEQ_LEN) if max_seq_len is None else max_seq_len
    if not isinstance(max_seq_len, int) or not 2 <= max_seq_len <= limit:
        raise MegagenError(f"max_seq_len must be an int in 2..{limit} (the model's max_position_embeddings), "
                           f"got {max_seq_len!r}")
    device = decoder.device
    if interpreting() and device.type != "cpu":
        raise MegagenError(f"the model is on {device} but Triton's interpreter is on; keep the model on the CPU")
    if not interpreting() and device.type != "cuda":
        raise MegagenError(f"the model is on {device}; move it to a CUDA GPU (model.to('cuda')) first")
    if tp > 1 and world is None and interpreting():
        raise MegagenError(f"tp={tp} without a GPU runs in one process: pass world='emulated'")
    num_ctas = kernel_options.pop("num_ctas", None)
    if num_ctas is None:  # two CTAs per SM keep twice the weight bytes in flight (measured faster, BENCHMARKS.md)
        num_ctas = INTERPRETER_VIRTUAL_CTAS if interpreting() else CTAS_PER_SM * num_sms(device)
        if world == "emulated" and not interpreting():  # every rank's CTAs share the one GPU, all co-resident
            num_ctas = max(1, num_ctas // tp)
    tiles = {k: kernel_options.pop(k) for k in TILING_OPTIONS if k in kernel_options}
    tiling = Tiling.for_tp(num_ctas, tp, **tiles)
    owned = not isinstance(world, World)
    world = make_world(tp, world, device)
    try:
        if world.device != device:
            raise MegagenError(f"rank {world.ranks[0]}'s model is on {device}; put it on {world.device} (its "
                               "LOCAL_RANK's GPU) before build")
        return Runner(decoder, world=world, scheduler=scheduler or "round_robin", max_seq_len=max_seq_len,
                      max_batch_size=max_batch_size, tiling=tiling, allreduce=allreduce, max_top_k=max_top_k,
                      kernel_options=kernel_options)
    except BaseException:
        if owned:
            world.close()  # nothing half-built stays: NVSHMEM and the process group go with the failed build
        raise
