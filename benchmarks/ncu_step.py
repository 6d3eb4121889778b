"""Run one model's decode step under Nsight Compute: the MegaKernel's launches between profiler start and stop.

    ncu --profile-from-start off --clock-control none -k regex:megakernel --section WarpStateStats \\
        -o step python benchmarks/ncu_step.py --model Qwen3-0.6B [--sample] --cubin step.cubin

Builds the model's MegaKernel (random bf16 weights), prefills a random prompt to the context, runs warm-up launches,
then launches ``--launches`` steps (the position reset before each, as in megagen bench) with the CUDA profiler on,
so ncu sees those launches alone. Launched from Python, not from a CUDA graph: ncu profiles a kernel, not a graph.
``--cubin`` saves the kernel's machine code, which ``benchmarks/ncu_attribute.py`` reads beside ncu's samples.
"""
import argparse

import torch

import megagen
from megagen import models
from megagen.bench import SAMPLE_SETTINGS, build_options, set_sampling


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="Qwen3-0.6B")
    ap.add_argument("--context", type=int, default=512)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--scheduler", default="round_robin")
    ap.add_argument("--launches", type=int, default=1, help="launches profiled")
    ap.add_argument("--sample", action="store_true", help=f"draw the tokens with {SAMPLE_SETTINGS}, not greedily")
    ap.add_argument("--option", action="append", default=[], help="a megagen.build option, e.g. max_tile_rows=16")
    ap.add_argument("--cubin", help="write the MegaKernel's cubin here (for benchmarks/ncu_attribute.py)")
    args = ap.parse_args()
    model = models.load(args.model, dtype=torch.bfloat16, device="cuda")
    prompt = torch.randint(3, model.config.vocab_size, (args.batch, args.context), device="cuda")
    runner = megagen.build(model, scheduler=args.scheduler, max_seq_len=args.context + 16,
                           max_batch_size=args.batch, **build_options(args.option))
    kernel = runner.kernel(args.batch, args.sample)
    runner.prefill(prompt, set_sampling(runner, args.sample))
    for profiled in [False] * 10 + [True] * args.launches:
        runner.state.pos[:args.batch].fill_(args.context)
        torch.cuda.synchronize()
        if profiled:
            torch.cuda.profiler.start()
        kernel.run(check=False)
        torch.cuda.synchronize()
        if profiled:
            torch.cuda.profiler.stop()
    kernel.check()
    if args.cubin:
        with open(args.cubin, "wb") as f:
            f.write(kernel._compiled().asm["cubin"])
    print(f"{args.model}, batch {args.batch}, {'sampling' if args.sample else 'greedy'}: {args.launches} launch(es) "
          f"profiled on {torch.cuda.get_device_name()}")


if __name__ == "__main__":
    main()
