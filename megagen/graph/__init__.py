"""Graph layer: ops in program order (TaskGraph) and the tile-level DAG derived from them (TileDAG)."""
from megagen.graph.dependencies import TileDAG, overlapping_pairs
from megagen.graph.taskgraph import Op, TaskGraph, buffer_key

__all__ = ["Op", "TaskGraph", "TileDAG", "buffer_key", "overlapping_pairs"]
