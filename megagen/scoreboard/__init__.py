"""Scoreboard: device-side wait/release (``device``) and its host-side encoding (``layout``)."""
from megagen.scoreboard.layout import RECORD_SIZE, ScoreboardLayout, build_layout, encode_dependencies, ticket_bases

__all__ = ["RECORD_SIZE", "ScoreboardLayout", "build_layout", "encode_dependencies", "ticket_bases"]
