"""Charter's version, the single place it is written.

pyproject.toml reads it from here (``[tool.setuptools.dynamic]``), and plans,
SARIF output and ``--version`` print it without reading installed package
metadata: importing :mod:`importlib.metadata` costs 20 to 35 ms of start-up.
"""

from __future__ import annotations

__all__ = ["VERSION"]

VERSION = "0.1.0"
