"""Finding every exception class a package defines, for the error-tree tests."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterator
from types import ModuleType

__all__ = ["defined_exceptions"]


def defined_exceptions(package: ModuleType) -> Iterator[tuple[str, str, type[BaseException]]]:
    """(module, class name, class) for each exception class defined (not just
    imported) in a module of ``package``. ``__main__`` modules are passed
    over: importing one runs it."""
    for info in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__ == info.name
            ):
                yield info.name, name, obj
