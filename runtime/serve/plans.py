"""The plan a decision server answers with, and its reload when the source changes.

A :class:`PlanHolder` keeps the last plan that loaded. A source says cheaply
whether it may have changed (its :meth:`PlanSource.signature`: a plan file's
``stat``); when it has, the holder loads it again and swaps the new plan in
only if it loaded and its digest differs. A damaged plan (cut short while
being written, tampered with, of another schema version) is refused and the
last good one stays in use; the problem is kept for ``/v1/health`` and the
log, and that same state of the source is not tried again until it changes.

A plan file is checked on every request (one ``stat``), so an answer uses the
plan the file holds now, as ``charter hook`` does. A source whose check costs
more (a project compiled from its files) is polled by :meth:`PlanHolder.watch`.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from charter.runtime.errors import CharterError
from charter.runtime.plan.loader import PlanError
from charter.runtime.plan.prepared import PreparedPlan, load_for_agents, prepare

if TYPE_CHECKING:
    from charter.runtime.plan import Plan

__all__ = ["FileSource", "Loaded", "PlanHolder", "PlanLoadError", "PlanSource", "ProjectSource"]

# What a project's signature walks past, and how many files it looks at.
_SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv", "build", "target"})
_MAX_FILES = 20_000


class PlanLoadError(CharterError):
    """The source holds no usable plan; the message says why."""


class PlanSource(Protocol):
    """Where plans come from."""

    # True: signature() is cheap enough to call on every request.
    cheap: bool

    def describe(self) -> str: ...

    def signature(self) -> Hashable:
        """A value that changes whenever the plan may have changed."""
        ...

    def load(self) -> PreparedPlan:
        """The plan, prepared for deciding; raises PlanLoadError."""
        ...


class FileSource:
    """A compiled plan file (``plan.json``)."""

    cheap = True

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def describe(self) -> str:
        return str(self.path)

    def signature(self) -> Hashable:
        try:
            st = os.stat(self.path)
        except OSError as exc:
            return ("missing", exc.errno)
        return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_dev)

    def load(self) -> PreparedPlan:
        try:
            # Every agent, and every argument validator compiled now: the
            # server decides from many threads, and lazily built validators
            # are not built under a lock.
            return load_for_agents(self.path, None, eager=True)
        except PlanError as exc:
            raise PlanLoadError(str(exc)) from exc
        except OSError as exc:
            raise PlanLoadError(f"{self.path}: {exc.strerror or exc}") from exc


class ProjectSource:
    """A project directory, compiled into a plan by ``compile`` (the caller's:
    the runtime never compiles), which returns the plan or why there is none."""

    cheap = False

    def __init__(
        self, root: Path, compile: Callable[[], Plan | str], *, config: Path | None = None
    ) -> None:
        self.root = root
        self.config = config
        self._compile = compile

    def describe(self) -> str:
        return str(self.root)

    def signature(self) -> Hashable:
        """A digest of every file's name, size and modification time (and the
        config's): any edit changes it. Capped, so a huge tree costs bounded work."""
        h = hashlib.sha256()
        seen = 0
        for top, dirs, files in os.walk(self.root):
            dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
            for name in sorted(files):
                seen += 1
                if seen > _MAX_FILES:
                    return h.hexdigest(), seen
                path = os.path.join(top, name)
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                h.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "replace"))
        if self.config is not None:
            try:
                h.update(f"config\0{os.stat(self.config).st_mtime_ns}".encode())
            except OSError:
                h.update(b"config missing")
        return h.hexdigest(), seen

    def load(self) -> PreparedPlan:
        compiled = self._compile()
        if isinstance(compiled, str):
            raise PlanLoadError(compiled)
        return prepare(compiled, eager=True)


@dataclass(frozen=True, slots=True)
class Loaded:
    """A plan in use: what it is, where from, and when it was loaded."""

    prepared: PreparedPlan
    digest: str
    source: str
    loaded_at: float

    @property
    def agents(self) -> tuple[str, ...]:
        return self.prepared.agent_names


class PlanHolder:
    """The current plan of a server, reloaded when its source changes."""

    def __init__(
        self,
        source: PlanSource,
        *,
        on_event: Callable[[str, dict[str, object]], None] | None = None,
    ) -> None:
        self.source = source
        self.on_event = on_event
        self._lock = threading.Lock()
        self._seen = source.signature()
        self.current = self._load()  # the first load must succeed
        self.last_error = ""
        self.last_error_at = 0.0
        self.reloads = 0

    def _load(self) -> Loaded:
        prepared = self.source.load()
        return Loaded(prepared, prepared.plan.digest, self.source.describe(), time.time())

    def plan(self) -> Loaded:
        """The plan to answer the next request with: the source is checked
        first when that is cheap."""
        if self.source.cheap:
            self.refresh()
        return self.current

    def refresh(self) -> bool:
        """Reload when the source changed; True when a new plan is in use."""
        signature = self.source.signature()
        if signature == self._seen:
            return False
        with self._lock:
            if signature == self._seen:  # another thread reloaded meanwhile
                return False
            self._seen = signature
            try:
                loaded = self._load()
            except PlanLoadError as exc:
                self.last_error = str(exc)
                self.last_error_at = time.time()
                self._event(
                    "plan_refused",
                    {
                        "source": self.source.describe(),
                        "reason": str(exc),
                        "kept": self.current.digest,
                    },
                )
                return False
            if loaded.digest == self.current.digest:
                return False  # rewritten with the same content
            old = self.current.digest
            self.current = loaded
            self.last_error = ""
            self.reloads += 1
        self._event("plan_loaded", {"source": loaded.source, "digest": loaded.digest, "was": old})
        return True

    def watch(self, interval: float, stop: threading.Event) -> threading.Thread:
        """Poll the source every ``interval`` seconds until ``stop`` is set."""

        def loop() -> None:
            while not stop.wait(interval):
                try:
                    self.refresh()
                except Exception as exc:  # keep watching; the last good plan stays
                    self._event(
                        "plan_refused", {"source": self.source.describe(), "reason": repr(exc)}
                    )

        thread = threading.Thread(target=loop, name="charter-serve-watch", daemon=True)
        thread.start()
        return thread

    def _event(self, name: str, fields: dict[str, object]) -> None:
        if self.on_event is not None:
            self.on_event(name, fields)
