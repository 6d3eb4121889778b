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
