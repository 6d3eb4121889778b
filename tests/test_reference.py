"""The reference executor: built-in tasks' PyTorch references agree with their Triton tile functions (and a
whole decode step with the MegaKernel and HuggingFace), and ``find_mismatch`` names a broken op and tile."""
from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

import megagen
from megagen import TaskDefinitionError, find_mismatch, models, run_reference
from megagen.tasks import add, gemv, mul, rmsnorm_gemv_bias, scale, silu_mul_gemv_residual
from megagen.tasks.linear import gemv_bias
from megagen.tasks.norm import rmsnorm
from megagen.tasks.sampling import argmax_partial, embedding, greedy_pick
from mgutil import assert_matches, rand, weights


# ---------------------------------------------------------------------------------------------------------
# A task whose tile function is wrong on tile 3 while its reference is right (module level: registered once)
# ---------------------------------------------------------------------------------------------------------

@triton.jit
def twice_tile(x, out, n, tile, BLOCK: tl.constexpr):
    offs = tile * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    r = 2 * tl.load(x + offs, mask=m)
    if tile == 3:
        r += 1
    tl.store(out + offs, r, mask=m)


def twice_reference(x, out, tile, BLOCK):
    s = slice(tile * BLOCK, (tile + 1) * BLOCK)
    out[s] = 2 * x[s]


def twice_plan(x, out, BLOCK=16):
    t = megagen.tile_arange(megagen.cdiv(x.numel(), BLOCK))
    block = ((t * BLOCK, BLOCK),)
    return megagen.TilePlan(t.size, reads={"x": block}, writes={"out": block}, scalars={"n": x.numel()},
                            constexprs={"BLOCK": BLOCK})


twice = megagen.register_task("r_twice_wrong_on_tile_3", twice_tile, inputs=("x",), outputs=("out",),
                              plan=twice_plan, reference=twice_reference)


# ---------------------------------------------------------------------------------------------------------
# A decode step: reference executor against the MegaKernel and HuggingFace
# ---------------------------------------------------------------------------------------------------------

def _decode_runner(name: str, prompt_len: int, device, max_seq_len=32, **options):
    model = models.random_model(name, dtype=torch.float32, device=device)
    # 8 keys a split: the small cache still splits, so the reference covers the splits and their merge
    runner = megagen.build(model, max_seq_len=max_seq_len, attention_split_keys=8, **options)
    prompt = torch.randint(0, 256, (1, prompt_len), device=device)
    runner.prefill(prompt)
    return model, runner, prompt


def _snapshot(runner):
    """Save every tensor the decode step writes, and the decode state; the returned function restores them."""
    st = runner.state
    tensors = [op.tensors[n] for op in runner.task_graph.ops for n in op.plan.writes]
    tensors += [st.tokens, st.pos, *st.k_cache, *st.v_cache]
    saved = [t.clone() for t in tensors]

    def restore():
        for t, s in zip(tensors, saved):
            t.copy_(s)
    return restore


def _outputs(runner) -> dict:
    st = runner.state
    return dict(logits=runner.logits(1).clone(), tokens=st.tokens.clone(), pos=st.pos.clone(),
                k_cache=torch.stack(st.k_cache).clone(), v_cache=torch.stack(st.v_cache).clone())


# prompt lengths: Mistral's is longer than its sliding window (8), so the window cuts the context; at 70 each of
# Qwen3's 2 attention splits per KV head runs its 35 cached keys in three blocks of 16 (the last one masked)
@pytest.mark.parametrize("name, prompt_len, options", [
    ("tiny-qwen3", 5, {}), ("tiny-qwen2", 5, {}), ("tiny-mistral", 12, {}),
    ("tiny-qwen3", 70, dict(max_seq_len=96, attention_block=16)),
    ("tiny-llama", 5, dict(num_ctas=8, fuse_mlp=True))], ids=["qwen3", "qwen2", "mistral", "qwen3-blocks", "llama-fused-mlp"])
def test_reference_decode_step_matches_megakernel_and_huggingface(name, prompt_len, options, device):
    model, runner, prompt = _decode_runner(name, prompt_len, device, **options)
    restore = _snapshot(runner)
    token = runner.state.tokens[:1].clone()
    run_reference(runner.task_graph)
    reference = _outputs(runner)
    restore()
    runner.kernel(1).run()
    kernel = _outputs(runner)

    for what in ("logits", "k_cache", "v_cache"):
        torch.testing.assert_close(kernel[what], reference[what], rtol=1e-4, atol=1e-5, msg=lambda m: f"{what}: {m}")
    assert torch.equal(kernel["tokens"], reference["tokens"]) and torch.equal(kernel["pos"], reference["pos"])
    assert int(reference["pos"][0]) == prompt_len + 1
    with torch.no_grad():
        hf = model(torch.cat([prompt, token[:, None]], 1)).logits[0, -1]
    torch.testing.assert_close(reference["logits"][0], hf, rtol=1e-4, atol=1e-4)
    assert int(reference["tokens"][0]) == int(hf.argmax())


@pytest.mark.parametrize("options", [{}, dict(num_ctas=8, fuse_mlp=True)], ids=["two_phase_mlp", "fused_mlp"])
def test_find_mismatch_passes_a_decode_step_and_leaves_the_reference_state(options, device):
    _, runner, _ = _decode_runner("tiny-qwen3", 5, device, **options)
    assert ("L0.mlp" in runner.graph.nodes) == bool(options)
    restore = _snapshot(runner)
    run_reference(runner.task_graph)
    reference = _outputs(runner)
    restore()
    assert find_mismatch(runner.task_graph) is None
    after = _outputs(runner)
    for what, value in reference.items():
        assert torch.equal(after[what], value), what


# ---------------------------------------------------------------------------------------------------------
# Built-in tasks in shapes the decode step does not use: split-K partial sums, batch rows, several argmax blocks
# ---------------------------------------------------------------------------------------------------------

# GEMV tiles at batch 1 drop the batch dimension; a batch runs on tensor cores in blocks of 64 rows
@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("tile_rows", [(16, 16, 16), (12, 24, 72)], ids=["one_block", "masked_blocks"])
def test_find_mismatch_passes_builtin_tasks_in_other_shapes(device, batch, tile_rows):
    k, n = 64, 80
    g = megagen.TaskGraph("shapes")
    w1, w2, w3 = weights(n, k, device=device), weights(40, n, device=device), weights(n, 40, device=device)
    x, norm_w, bias = rand(1, batch, k, device=device), rand(n, device=device), rand(40, device=device)
    up = rand(1, batch, 40, device=device)
    table, tokens = rand(256, 40, device=device), torch.tensor([7, 200], device=device)
    next_tokens, pos = torch.zeros(2, dtype=torch.int64, device=device), torch.tensor([3, 9], device=device)
    logits = torch.zeros(1, 2, 200, device=device)
    logits[0, 0, [10, 150]] = 5.0  # a tie across argmax blocks: the lower id wins
    logits[0, 1, [70, 71]] = 3.0  # a tie inside one block
    g.input(w1, w2, w3, x, norm_w, bias, up, table, tokens, pos, logits)
    split = torch.empty(2, batch, n, device=device)  # two K chunks: fp32 partial sums
    # tiles of several row blocks, the last masked where a tile's rows end inside it or at N
    g.add(gemv, w=w1, x=x, y=split, BLOCK_N=16, BLOCK_K=64, TILE_ROWS=tile_rows[0])
    normed = torch.empty(1, batch, 40, device=device)
    eps = 0.5  # large enough that a tile ignoring it would show
    g.add(rmsnorm_gemv_bias, w=w2, x=split, norm_w=norm_w, bias=bias, y=normed, eps=eps, BLOCK_N=16,
          TILE_ROWS=tile_rows[1])
    out = torch.empty(1, batch, n, device=device)
    g.add(silu_mul_gemv_residual, w=w3, x=normed, x2=up, residual=split, y=out, BLOCK_N=16, TILE_ROWS=tile_rows[2])
    # the same RMSNorm as an op of its own, and a GEMV with a bias reading its rows
    x_norm = torch.empty(1, batch, n, device=device)
    g.add(rmsnorm, x=split, norm_w=norm_w, out=x_norm, eps=eps)
    normed2 = torch.empty(1, batch, 40, device=device)
    g.add(gemv_bias, w=w2, x=x_norm, bias=bias, y=normed2, BLOCK_N=16, TILE_ROWS=tile_rows[1])
    flat = [torch.empty(batch * n, device=device) for _ in range(3)]
    g.add(scale, x=out.view(-1), out=flat[0], alpha=0.3, BLOCK=32)
    g.add(add, x=flat[0], y=out.view(-1), out=flat[1], BLOCK=32)
    g.add(mul, x=flat[1], y=flat[0], out=flat[2], BLOCK=32)

    emb = torch.empty(1, 2, 40, device=device)
    g.add(embedding, tokens=tokens, table=table, out=emb, BLOCK=16)
    value, index = torch.empty(2, 4, device=device), torch.empty(2, 4, dtype=torch.int64, device=device)
    g.add(argmax_partial, logits=logits, value=value, index=index, ROWS=50)
    g.add(greedy_pick, value=value, index=index, tokens=next_tokens, pos=pos)

    assert find_mismatch(g) is None
    assert next_tokens.tolist() == [10, 70] and pos.tolist() == [4, 10]
    assert torch.equal(emb[0], table[[7, 200]])
    expected = {"out": out.clone(), "normed": normed.clone(), "x_norm": x_norm.clone(), "normed2": normed2.clone()}
    s = split.sum(0)
    torch.testing.assert_close(x_norm[0], s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + eps) * norm_w)
    # fused or as two ops, the same values
    torch.testing.assert_close(normed2, normed, rtol=1e-4, atol=1e-4)
    # plain PyTorch agrees with the references: y = W @ silu(x) * x2 + the two split-K partial sums
    gate = normed.float()
    torch.testing.assert_close(out[0], (gate * torch.sigmoid(gate) * up)[0] @ w3.T + split.sum(0), rtol=1e-4,
                               atol=1e-4)
    # and the MegaKernel computes the same, every tile of every op in one launch
    for t in (out, normed, x_norm, normed2):
        t.fill_(float("nan"))
    pos.copy_(torch.tensor([3, 9]))
    g.compile("round_robin").run()
    assert_matches(out, expected["out"], rtol=1e-4, atol=1e-4, what="out (MegaKernel)")
    assert_matches(normed, expected["normed"], rtol=1e-4, atol=1e-4, what="normed (MegaKernel)")
    assert_matches(x_norm, expected["x_norm"], rtol=1e-5, atol=1e-5, what="x_norm (MegaKernel)")
    assert_matches(normed2, expected["normed2"], rtol=1e-4, atol=1e-4, what="normed2 (MegaKernel)")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_16_bit_gemv_tiles_at_batch_1_match_their_reference(device, dtype):
    """A batch-1 GEMV tile holds 16-bit weights as int32 pairs and sums its products in groups of 8 columns: its
    values are the reference's, in the MegaKernel too (tiles of three K steps, ending inside a row block)."""
    k, n = 96, 40
    w, x = weights(n, k, device=device).to(dtype), rand(1, 1, k, device=device, dtype=dtype)
    y = torch.empty(1, 1, n, device=device, dtype=dtype)
    g = megagen.TaskGraph("packed", inputs=[w, x])
    g.add(gemv, w=w, x=x, y=y, BLOCK_N=16, BLOCK_K=32, TILE_ROWS=24)
    assert find_mismatch(g) is None
    expected = y.clone()
    torch.testing.assert_close(expected[0, 0].float(), w.float() @ x[0, 0].float(), rtol=1e-2, atol=1e-2)
    y.fill_(float("nan"))
    g.compile("round_robin").run()
    assert_matches(y, expected, rtol=1e-2, atol=1e-3, what="y (MegaKernel)")


def test_16_bit_weights_must_be_aligned_for_their_pairs(device):
    base = weights(40, 97, device=device).to(torch.bfloat16).view(-1)
    w = base[1:1 + 40 * 96].view(40, 96)  # 2 bytes past an aligned allocation
    x, y = rand(1, 1, 96, device=device, dtype=torch.bfloat16), torch.empty(1, 1, 40, device=device)
    with pytest.raises(TaskDefinitionError, match="4-byte aligned"):
        megagen.TaskGraph().add(gemv, w=w, x=x, y=y)
    megagen.TaskGraph().add(gemv, w=w.clone(), x=x, y=y)
    x2, y2 = rand(1, 2, 96, device=device, dtype=torch.bfloat16), torch.empty(1, 2, 40, device=device)
    megagen.TaskGraph().add(gemv, w=w, x=x2, y=y2)  # a batch's tiles load the weights as stored


# ---------------------------------------------------------------------------------------------------------
# find_mismatch localises a broken tile
# ---------------------------------------------------------------------------------------------------------

def test_find_mismatch_names_the_op_and_tile_that_is_wrong(device):
    x = rand(100, device=device)
    h, y, z = (torch.empty(100, device=device) for _ in range(3))
    g = megagen.TaskGraph("broken", inputs=[x])
    g.add(scale, x=x, out=h, alpha=0.5, BLOCK=16)
    g.add(twice, name="twice", x=h, out=y)
    g.add(add, x=y, y=h, out=z, BLOCK=16)

    m = find_mismatch(g)
    assert m is not None
    assert (m.op, m.tile, m.tensor) == ("twice", 3, "out")
    assert m.box == (slice(48, 64),) and (m.mismatched, m.size) == (16, 16)
    assert m.max_abs_error == pytest.approx(1.0)
    assert "twice" in str(m) and "tile 3" in str(m) and "out[48:64]" in str(m)
    assert torch.equal(y, x), "afterwards the buffer holds the reference's result (2 * 0.5 * x)"


# ---------------------------------------------------------------------------------------------------------
# Registration checks
# ---------------------------------------------------------------------------------------------------------

def test_argmax_blocks_of_unusable_size_are_refused(device):
    logits = rand(1, 2, 200, device=device)
    for rows in (0, 8193, 50.0):
        value, index = torch.empty(2, 4, device=device), torch.empty(2, 4, dtype=torch.int64, device=device)
        with pytest.raises(TaskDefinitionError, match=r"ROWS \(logits a block\) must be an int in 1\.\.8192"):
            megagen.TaskGraph().add(argmax_partial, logits=logits, value=value, index=index, ROWS=rows)
    with pytest.raises(TaskDefinitionError, match=r"value and index must be \[B, blocks\] = \(2, 5\)"):
        megagen.TaskGraph().add(argmax_partial, logits=logits, value=value, index=index, ROWS=40)


def test_reference_parameters_are_checked(device):
    def takes_gain(x, out, tile, BLOCK, gain):
        pass

    def takes_prefetched(x, out, tile, prefetched):
        pass

    def takes_kwargs(x, out, **rest):
        pass

    for reference, match in ((twice_tile, "plain Python function"), ("twice", "plain Python function"),
                             (takes_prefetched, "takes 'prefetched'"), (takes_kwargs, "named parameters only")):
        with pytest.raises(TaskDefinitionError, match=match):
            megagen.register_task("r_bad", twice_tile, inputs=("x",), outputs=("out",), plan=twice_plan,
                                  reference=reference)
    assert "r_bad" not in megagen.registered_tasks()

    gain = megagen.register_task("r_unknown_param", twice_tile, inputs=("x",), outputs=("out",), plan=twice_plan,
                                 reference=takes_gain)
    x = rand(32, device=device)
    with pytest.raises(TaskDefinitionError,
                       match=r"takes_gain takes \['gain'\], which are neither tensors, plan scalars, plan constexprs"
                             r", 'tile', 'rank' nor 'WORLD'"):
        megagen.TaskGraph().add(gain, x=x, out=torch.empty_like(x))

    with pytest.raises(TaskDefinitionError, match="already registered"):
        megagen.register_task("r_twice_wrong_on_tile_3", twice_tile, inputs=("x",), outputs=("out",),
                              plan=twice_plan, reference=takes_gain)
    assert megagen.register_task("r_twice_wrong_on_tile_3", twice_tile, inputs=("x",), outputs=("out",),
                                 plan=twice_plan, reference=twice_reference).reference is twice_reference


def test_run_reference_needs_a_reference_for_every_task(device):
    plain = megagen.register_task("r_no_reference", twice_tile, inputs=("x",), outputs=("out",), plan=twice_plan)
    x = rand(32, device=device)
    g = megagen.TaskGraph()
    g.add(plain, x=x, out=torch.empty_like(x))
    with pytest.raises(TaskDefinitionError, match=r"\['r_no_reference'\] have no reference"):
        run_reference(g)
