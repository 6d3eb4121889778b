"""The ``megagen`` console script: ``megagen demo ...`` and ``megagen bench ...``."""
import importlib
import sys
import textwrap

from megagen.errors import MegagenError

# command -> (module whose main(argv) runs it, what it does)
COMMANDS = {
    "demo": ("megagen.demo", "build a HuggingFace model (random weights, or a local checkpoint) into a MegaKernel, "
                             "generate with it beside model.generate, and check every scheduler"),
    "bench": ("megagen.bench", "time a decode step of megagen beside HuggingFace and torch.compile under CUDA "
                               "graphs, against the bandwidth floor (needs a GPU; --dry-run checks the harness)"),
}

HELP = "\n".join(
    ["usage: megagen COMMAND [options]", "",
     "megagen turns a HuggingFace causal LM into one persistent Triton MegaKernel per decode step.", "",
     "commands:"]
    + [textwrap.fill(text, 100, initial_indent=f"  {name:<7}", subsequent_indent=" " * 9)
       for name, (_, text) in COMMANDS.items()]
    + ["", "`megagen COMMAND --help` lists a command's options. Tensor parallelism under torchrun:",
       "  torchrun --nproc-per-node N -m megagen.bench_tp --model Qwen3-8B"])


def run(command_main, prog: str, argv=None) -> int:
    """Run a command; a MegagenError (bad input) is one line on stderr and exit status 2, not a traceback."""
    try:
        return command_main(argv) or 0
    except MegagenError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] in (["-h"], ["--help"]):
        print(HELP)
        return 0
    if not argv or argv[0] not in COMMANDS:
        problem = f"unknown command {argv[0]!r}" if argv else "no command given"
        print(f"megagen: error: {problem}\n\n{HELP}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[argv[0]][0])
    return run(module.main, f"megagen {argv[0]}", argv[1:])


if __name__ == "__main__":
    sys.exit(main())
