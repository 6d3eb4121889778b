"""The ``megagen`` console script: ``megagen bench ...`` and ``megagen demo ...``."""
import sys

COMMANDS = {"bench": "megagen.bench", "demo": "megagen.demo"}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] not in COMMANDS:
        print(f"usage: megagen {{{','.join(COMMANDS)}}} [options]   (megagen COMMAND --help for its options)",
              file=sys.stderr)
        return 2
    import importlib
    module = importlib.import_module(COMMANDS[argv[0]])
    sys.argv = [f"megagen {argv[0]}"] + argv[1:]
    return module.main() or 0


if __name__ == "__main__":
    sys.exit(main())
