"""Reading the data files Charter ships inside its packages.

A package installed as ordinary files (a wheel, an editable install, a
source checkout) keeps its data beside its modules, and reading it by path
costs nothing to import. :mod:`importlib.resources` handles every other
loader (a zip file, say) but pulls in zipfile, tempfile and threading, a few
milliseconds of every cold start, so it is only the fallback.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["read_text"]


def read_text(package: str, module_file: str, *parts: str) -> str:
    """The UTF-8 text of ``parts`` inside ``package``, whose module (any
    module directly in it) is ``module_file``."""
    path = Path(module_file).parent.joinpath(*parts)
    try:
        return path.read_text("utf-8")
    except (FileNotFoundError, NotADirectoryError):
        from importlib import resources

        return resources.files(package).joinpath(*parts).read_text("utf-8")
