"""Mixture-of-experts decoders (issue 16): routing on the device, against transformers itself.

Tiny random-weight float32 Qwen3-MoE (a dense layer among sparse ones, via mlp_only_layers) and Mixtral
models give ``model.generate``'s tokens and its logits within 1e-4, and the routing the MegaKernel picked
is HuggingFace's; the routing must differ between rows and between steps, or the test would prove little.
"""
from __future__ import annotations

import pytest
import torch
from torch import nn

import megagen
from megagen import find_mismatch, models
from megagen.decode import DecodeState, Tiling, decode_graph
from megagen.tasks import moe
from megagen.trace import trace
from test_models import DEVICE, INIT, MAX_SEQ_LEN, check_against_hf, prompt, tiny

NEW_TOKENS = 5  # prefill + 4 MegaKernel decode steps


@torch.no_grad()
def hf_routing(model, seq: torch.Tensor) -> dict[int, tuple[torch.Tensor, torch.Tensor]]:
    """Per sparse layer, the experts HuggingFace routes each position of ``seq`` to and their routing weights:
    ([B, positions, top_k], the same)."""
    routed, hooks = {}, []

    def keep(i, out):
        routed[i] = tuple(t.view(seq.shape[0], seq.shape[1], -1) for t in (out[2], out[1]))
    for i, layer in enumerate(model.model.layers):
        if hasattr(layer.mlp, "experts"):
            hooks.append(layer.mlp.gate.register_forward_hook(lambda mod, args, out, i=i: keep(i, out)))
    try:
        model(seq)
    finally:
        for h in hooks:
            h.remove()
    return routed


def matches_reference(g, out, **tolerance):
    """Graph ``g``'s tiles agree with their references (``find_mismatch``, which leaves the references' values in
    ``out``), and a MegaKernel launch writes those values again over ``out`` filled with NaN."""
    assert find_mismatch(g) is None
    expected = out.clone()
    out.fill_(float("nan"))
    g.compile("round_robin").run()
    torch.testing.assert_close(out, expected, **tolerance)


# preset, batch, tp (emulated: every rank holds a slice of every expert), overrides
CASES = [
    ("tiny-qwen3-moe", 1, 1, {}),
    ("tiny-qwen3-moe", 3, 1, {}),
    ("tiny-qwen3-moe", 1, 1, {"norm_topk_prob": False}),
    ("tiny-mixtral", 1, 1, {}),
    ("tiny-mixtral", 3, 1, {}),
    ("tiny-qwen3-moe", 3, 2, {}),
    ("tiny-mixtral", 1, 2, {}),
]


@pytest.mark.parametrize("name, batch, tp, overrides", CASES,
                         ids=[f"{c[0]}-b{c[1]}-tp{c[2]}{''.join(f'-{k}={v}' for k, v in c[3].items())}" for c in CASES])
def test_moe_matches_hf(name, batch, tp, overrides):
    model = tiny(name, **overrides)
    world = dict(tp=tp, world="emulated") if tp > 1 else {}
    runner = megagen.build(model, max_seq_len=MAX_SEQ_LEN, max_batch_size=batch, **world)
    sparse = [i for i, layer in enumerate(runner.decoder.layers) if layer.experts is not None]
    if name == "tiny-qwen3-moe":
        assert sparse == [0, 2], "test setup: layer 1 is dense (mlp_only_layers), the others sparse"
    else:
        assert sparse == [0, 1]
    ids = prompt(batch, 5, seed=21 + batch)
    seq = check_against_hf(runner, model, ids, NEW_TOKENS)

    # the routing is HuggingFace's: the last decode step's ids and weights are still in their buffers
    length = ids.shape[1]
    routed = hf_routing(model, seq)
    ops = {op.name: op for op in runner.task_graph.ops}
    shared = False  # whether two rows' picks share an expert in the last step (so the union has fewer slots)
    for i in sparse:
        decode = routed[i][0][:, length - 1:-1]  # the positions the MegaKernel's steps read
        assert not all(torch.equal(decode[:, 0].sort(-1).values, decode[:, s].sort(-1).values)
                       for s in range(decode.shape[1])), f"test setup: layer {i} routes every step alike"
        if batch > 1:
            assert not all(torch.equal(decode[0].sort(-1).values, decode[b].sort(-1).values) for b in range(batch)), \
                f"test setup: layer {i} routes every row alike"
        early = tp == 1  # early routing: the router's last tile picks the experts, routing_weights weighs them
        route = ops[f"L{i}.router_a" if early else f"L{i}.route"].tensors
        assert torch.equal(route["ids"], decode[:, -1]), f"layer {i}: the MegaKernel routed differently"
        want_weights = routed[i][1][:, -2]  # the last step's
        if early:
            assert ops[f"L{i}.router_a"].task is moe.router_route and f"L{i}.route" not in ops
            assert ops[f"L{i}.routing_weights"].task is moe.routing_weights
        if batch > 1:  # the experts' slots are the rows' union: each expert the step routes to streamed once
            union = ops[f"L{i}.experts_union"].tensors
            picks = decode[:, -1].reshape(-1).tolist()
            distinct = list(dict.fromkeys(picks))
            assert union["slots"].tolist() == distinct + [-1] * (len(picks) - len(distinct))
            assert union["slots"][union["slot_of"].view(-1)].tolist() == picks
            shared |= len(distinct) < len(picks)
        weights = ops[f"L{i}.routing_weights" if early else f"L{i}.route"].tensors["weights"]
        weight_dtype = weights.dtype
        assert weight_dtype == (torch.float32 if name == "tiny-mixtral" else model.dtype)
        torch.testing.assert_close(weights.float(), want_weights.float(), rtol=1e-5, atol=1e-6)
    assert shared or batch == 1, "test setup: no two rows share an expert in the last step of any sparse layer"
    if tp > 1:  # each rank's slice of every expert, its partial sums allreduced
        inter = runner.decoder.layers[0].experts.intermediate_size
        assert runner.shards[1].layers[0].experts.intermediate_size == inter // tp
        assert any(n.startswith(f"L{sparse[0]}.experts_combine.allreduce") for n in ops)
    else:  # the tiles agree with their references over the whole step (a fresh step from the state left)
        assert find_mismatch(runner.task_graph) is None


@pytest.mark.parametrize("name", ["tiny-qwen3-moe", "tiny-mixtral"])
def test_moe_routed_after_o_matches_hf(name):
    """With early routing off, a sparse layer on one rank routes as on several: router, route, the union of the rows'
    experts, then the combine reading the route's weights."""
    model = tiny(name)
    runner = megagen.build(model, max_seq_len=MAX_SEQ_LEN, max_batch_size=2, early_routing=False)
    check_against_hf(runner, model, prompt(2, 5, seed=9), 3)
    ops = {op.name: op for op in runner.task_graph.ops}
    assert ops["L0.route"].task is moe.route and ops["L0.experts_union"].task is moe.expert_union
    assert ops["L0.experts_combine"].task is moe.moe_combine_union_residual
    assert "L0.router_x" not in ops and find_mismatch(runner.task_graph) is None


def test_early_routing_router_tiles_of_the_rows_asked():
    """``router_tile_rows`` sets how many rows a tile of early routing's router takes; the route in its last tile
    to finish still gives HuggingFace's experts and tokens."""
    model = tiny("tiny-qwen3-moe")
    runner = megagen.build(model, max_seq_len=MAX_SEQ_LEN, max_batch_size=2, router_tile_rows=3)
    check_against_hf(runner, model, prompt(2, 5, seed=11), 3)
    router = {op.name: op for op in runner.task_graph.ops}["L0.router_a"]
    assert router.task is moe.router_route and router.num_tiles == -(-model.config.num_experts // 3)
    assert find_mismatch(runner.task_graph) is None


def test_early_routing_gives_the_router_ctas_of_its_own():
    """By default o is tiled as one phase with the router's rows, so o's tiles and the router's, which follow them
    in the order, fit one wave of CTAs: round robin puts no router tile behind an o tile. With router_tile_rows set,
    o is tiled alone and fills the CTAs."""
    decoder = trace(models.random_model("tiny-qwen3-moe", dtype=torch.float32))
    ctas = 8

    def tiles(**options):
        graph = decode_graph(decoder, DecodeState.allocate(decoder, 1, MAX_SEQ_LEN), 1, Tiling(ctas, **options))
        ops = {op.name: op for op in graph.ops}
        names = [op.name for op in graph.ops]
        assert names.index("L0.router_a") == names.index("L0.o_proj") + 1
        return ops["L0.o_proj"].num_tiles, ops["L0.router_a"].num_tiles

    o, router = tiles()
    assert o + router <= ctas, (o, router)
    o_alone, router_rows_2 = tiles(router_tile_rows=2)
    assert o_alone == ctas and router_rows_2 == -(-decoder.layers[0].experts.router.shape[0] // 2)


@pytest.mark.parametrize("scheduler", ["zigzag", "work_queue"])
def test_moe_under_other_schedulers(scheduler):
    model = tiny("tiny-qwen3-moe")
    runner = megagen.build(model, max_seq_len=MAX_SEQ_LEN, max_batch_size=2, scheduler=scheduler)
    check_against_hf(runner, model, prompt(2, 5, seed=5), 3)


def test_routing_weights_refuses_tensors_it_cannot_read():
    """Early routing's routing_weights names what is wrong with its tensors when the graph is built."""
    logits, residual, weights = torch.randn(1, 2, 8), torch.randn(3, 2, 16), torch.empty(2, 2)
    megagen.TaskGraph("ok").add(moe.routing_weights, logits=logits, residual=residual, weights=weights)
    for bad in (dict(logits=torch.randn(1, 3, 8)), dict(weights=torch.empty(3, 2)), dict(residual=residual.double()),
                dict(weights=torch.empty(2, 9)), dict(logits=torch.randn(1, 2, 8).double())):
        tensors = {**dict(logits=logits, residual=residual, weights=weights), **bad}
        with pytest.raises(megagen.TaskDefinitionError, match=r"routing_weights: needs contiguous fp32 logits"):
            megagen.TaskGraph("bad").add(moe.routing_weights, **tensors)


def test_route_weights_are_hf_routers(device):
    """The route task's ids and weights against HuggingFace's own routers, each family's order of operations."""
    from transformers.models.mixtral.modeling_mixtral import MixtralTopKRouter
    from transformers.models.qwen3_moe.modeling_qwen3_moe import Qwen3MoeTopKRouter
    hidden = torch.randn(6, 32, device=device)
    for router in (Qwen3MoeTopKRouter(models.preset_config("tiny-qwen3-moe", hidden_size=32, num_experts=12,
                                                                  num_experts_per_tok=3)),
                   Qwen3MoeTopKRouter(models.preset_config("tiny-qwen3-moe", hidden_size=32, norm_topk_prob=False)),
                   MixtralTopKRouter(models.preset_config("tiny-mixtral", hidden_size=32))):
        router = router.to(device)
        nn.init.normal_(router.weight)
        with torch.no_grad():
            logits, want_weights, want_ids = router(hidden)
        renormalize = getattr(router, "norm_topk_prob", True)
        g = megagen.TaskGraph("route")
        logits = logits[None].contiguous()
        ids = torch.empty_like(want_ids)
        weights = torch.empty_like(want_weights)
        g.input(logits)
        g.add(moe.route, logits=logits, ids=ids, weights=weights, RENORMALIZE=renormalize)
        assert find_mismatch(g) is None
        g.compile("round_robin").run()
        assert torch.equal(ids, want_ids)
        torch.testing.assert_close(weights, want_weights, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("experts,top_k", [(128, 8), (12, 3), (8, 2)])
def test_route_breaks_ties_to_the_lower_expert(device, experts, top_k):
    """Experts of equal probability are taken lowest id first, and the padding past E (E = 12) never; early routing's
    routing_weights, which picks the experts again from the same logits, weighs the route's."""
    gen = torch.Generator().manual_seed(experts)
    rows = torch.stack([torch.zeros(experts),  # all tied
                        torch.randint(0, 3, (experts,), generator=gen).float(),  # few values, many ties
                        torch.randn(experts, generator=gen)]).to(device)
    logits = rows[None].contiguous()
    ids = torch.empty(3, top_k, dtype=torch.int64, device=device)
    weights = torch.empty(3, top_k, device=device)
    residual = 2 * torch.ones(1, 3, 16, device=device)  # the stream after o: the norm's factor 1 / 2
    weighed = torch.empty_like(weights)
    g = megagen.TaskGraph("route_ties", inputs=[logits, residual])
    g.add(moe.route, logits=logits, ids=ids, weights=weights, RENORMALIZE=False)
    g.add(moe.routing_weights, logits=logits, residual=residual, weights=weighed, eps=0.0, RENORMALIZE=False)
    g.compile("round_robin").run()
    probs = torch.softmax(rows.float(), dim=-1).cpu()
    scaled = torch.softmax(rows.float() / 2, dim=-1).cpu()
    for b in range(3):
        want = sorted(range(experts), key=lambda e: (-probs[b, e].item(), e))[:top_k]
        assert ids[b].tolist() == want, (b, ids[b].tolist(), want)
        torch.testing.assert_close(weights[b].cpu(), probs[b, want], rtol=1e-6, atol=1e-7)
        torch.testing.assert_close(weighed[b].cpu(), scaled[b, want], rtol=1e-6, atol=1e-7)


def test_shared_expert_is_unsupported_naming_the_module():
    """A part of a sparse block megagen has no task for (a Qwen2-MoE-style shared expert) is refused by name."""
    model = tiny("tiny-qwen3-moe")
    model.model.layers[2].mlp.shared_expert = nn.Linear(64, 64, bias=False, device=model.device, dtype=model.dtype)
    with pytest.raises(megagen.UnsupportedModelError, match=r"model\.layers\.2\.mlp\.shared_expert"):
        megagen.build(model, max_seq_len=MAX_SEQ_LEN)


@pytest.mark.parametrize("block", [(8, 1024), (4, 2048)])
def test_router_tiles_of_narrow_blocks_match_their_reference(device, block):
    """A router's few rows take narrow weight blocks (``Tiling.gemv_blocks``): a bf16 RMSNorm GEMV of 8-row tiles
    in 8 x 1024 or 4 x 2048 blocks (two loop steps a tile either way) gives the reference's logits."""
    from megagen.tasks import linear
    experts, k = 16, 2048
    w = (torch.randn(experts, k, device=device) / k ** 0.5).to(torch.bfloat16)
    norm_w = (1 + 0.1 * torch.randn(k, device=device)).to(torch.bfloat16)
    resid = torch.randn(2, 1, k, device=device)  # the residual stream: fp32 split-K partial sums
    logits = torch.empty(1, 1, experts, device=device, dtype=torch.bfloat16)
    g = megagen.TaskGraph("router", inputs=[w, norm_w, resid])
    op = g.add(linear.rmsnorm_gemv, w=w, x=resid, norm_w=norm_w, y=logits, BLOCK_N=block[0], BLOCK_K=block[1],
               TILE_ROWS=8)
    assert op.num_tiles == 2 and op.plan.constexprs["BLOCK_N"] == block[0]
    matches_reference(g, logits, rtol=0, atol=0)


def test_expert_union_gives_each_expert_one_slot(device):
    """expert_union: the distinct experts of a batch's picks in order of first appearance, -1 in the slots past them,
    and each pick's slot, for picks that share experts across rows, within none, and a batch of one."""
    for picks in ([[3, 1], [1, 5], [5, 3]], [[0, 2, 7], [2, 7, 0]], [[4, 6]],
                  [[9, 8, 7, 6], [1, 2, 3, 4], [6, 2, 0, 5]], [[5, 5], [5, 5]]):
        ids = torch.tensor(picks, device=device)
        slots = torch.full((ids.numel(),), -7, dtype=torch.int64, device=device)
        slot_of = torch.full_like(ids, -7)
        g = megagen.TaskGraph("union", inputs=[ids])
        g.add(moe.expert_union, ids=ids, slots=slots, slot_of=slot_of)
        g.compile("round_robin").run()
        flat = sum(picks, [])
        distinct = list(dict.fromkeys(flat))
        assert slots.tolist() == distinct + [-1] * (len(flat) - len(distinct)), picks
        assert slot_of.view(-1).tolist() == [distinct.index(e) for e in flat], picks
        assert find_mismatch(g) is None


def test_union_expert_tiles_multiply_every_row_and_skip_empty_slots(device):
    """A union slot's down tiles multiply every batch row's own gate and up rows by its expert's weights (split-K
    partial sums, against their reference and a plain product); a slot past the union (-1) writes nothing."""
    experts, inter, k, batch = 4, 48, 64, 3
    w = (torch.randn(experts, k, inter, device=device) / inter ** 0.5).to(torch.bfloat16)
    slots = torch.tensor([2, 0, -1, -1], device=device)
    x, x2 = (torch.randn(4, batch, inter, device=device).to(torch.bfloat16) for _ in range(2))
    y = torch.full((4 * 2, batch, k), float("nan"), device=device)  # 2 K splits a slot
    g = megagen.TaskGraph("union_experts", inputs=[w, x, x2, slots])
    g.add(moe.expert_silu_mul_gemv, w=w, x=x, x2=x2, ids=slots, y=y, BLOCK_N=16, BLOCK_K=16, TILE_ROWS=32)
    matches_reference(g, y, rtol=1e-4, atol=1e-4, equal_nan=True)
    assert y[:4].isfinite().all() and y[4:].isnan().all()
    for slot, expert in ((0, 2), (1, 0)):
        h = (torch.nn.functional.silu(x[slot].float()).to(torch.bfloat16).float() * x2[slot].float())
        torch.testing.assert_close(y[2 * slot:2 * slot + 2].sum(0), h @ w[expert].float().T, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_16_bit_expert_tiles_match_their_reference(device, dtype):
    """Expert tiles are GEMVs of a batch of one: they hold 16-bit weights as int32 pairs (as batch-1 linear tiles do),
    standalone and in the MegaKernel the reference's values; weights that are not 4-byte aligned are refused."""
    experts, inter, k = 4, 48, 64
    w = (torch.randn(experts, inter, k, device=device) / k ** 0.5).to(dtype)
    x, x2 = (torch.randn(1, 2, k, device=device).to(dtype) for _ in range(2))
    ids = torch.tensor([[0, 3], [2, 0]], device=device)
    y = torch.empty(1, 4, inter, device=device)
    g = megagen.TaskGraph("experts", inputs=[w, x, x2, ids])
    g.add(moe.expert_silu_mul_gemv, w=w, x=x, x2=x2, ids=ids, y=y, BLOCK_N=16, BLOCK_K=32, TILE_ROWS=24)
    matches_reference(g, y, rtol=1e-4, atol=1e-4)
    unaligned = torch.empty(experts * inter * k + 1, device=device, dtype=dtype)[1:].view(experts, inter, k)
    with pytest.raises(megagen.TaskDefinitionError, match="4-byte aligned"):
        megagen.TaskGraph().add(moe.expert_silu_mul_gemv, w=unaligned, x=x, x2=x2, ids=ids, y=y)
