"""Adapters that let other agents use a compiled plan as their policy decision point."""

from __future__ import annotations

__all__: list[str] = []
