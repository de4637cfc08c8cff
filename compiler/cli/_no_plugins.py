"""Stands in for ``pydantic.plugin._loader`` when plugins are disabled.

See :func:`charter.compiler.cli._install_plugin_loader_stand_in`. pydantic's
own loader returns an empty tuple under ``PYDANTIC_DISABLE_PLUGINS=__all__``;
this module returns the same without importing :mod:`importlib.metadata`.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["get_plugins"]


def get_plugins() -> Iterable[object]:
    return ()
