"""Errors megagen raises. Every one is a MegagenError, so callers can catch one type."""


class MegagenError(Exception):
    """Something megagen cannot do with the given input; the message says what to change."""


class TaskDefinitionError(MegagenError):
    """A task type or one of its plans is malformed (bad names, regions, tile counts)."""


class GraphError(MegagenError):
    """The task graph is inconsistent: a cycle, a read of a buffer nothing writes, overlapping writes."""


class DeadlockError(MegagenError):
    """A schedule cannot finish, or a MegaKernel run stopped waiting on a dependency that never arrived."""


class UnsupportedModelError(MegagenError):
    """A model (or one of its modules or settings) megagen cannot map onto its task library."""


def check_options(where: str, given, valid, note: str = "") -> None:
    """Refuse keyword options that ``where`` does not take, naming the closest valid one (a misspelt
    option would otherwise surface as a TypeError about an internal class, or be silently ignored)."""
    import difflib

    valid = sorted(set(valid))
    unknown = [name for name in given if name not in valid]
    if unknown:
        close = difflib.get_close_matches(unknown[0], valid, n=1, cutoff=0.5)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise MegagenError(f"{where} has no option {unknown[0]!r}; {hint}its options are {', '.join(valid)}{note}")
