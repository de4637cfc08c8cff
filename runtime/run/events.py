"""The event stream of a run: what happened, in order, for people and machines.

Every part of a run reports through one :class:`EventBus`. Each event is a
small JSON object (``kind`` plus fields); the bus stamps it with a sequence
number and the time and hands it to every sink:

- :class:`JsonLinesSink` writes one event per line (``events.jsonl`` in the
  run directory, and stdout under ``--json``);
- :class:`LiveView` draws the run for a person with rich: the stage and
  iteration, a card per tool call with its decision, duration and a trimmed
  result, and a spinner while the model thinks;
- :class:`QuietView` prints only problems (``--quiet``).

Sinks are called under the bus lock, so events from concurrent sub-agents
never interleave inside one line or card. A sink that fails is dropped with
a note rather than stopping the run: the audit log, not the view, is the
record that must not be lost.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from rich.console import Console
    from rich.status import Status

__all__ = [
    "Event",
    "EventBus",
    "EventSink",
    "JsonLinesSink",
    "LiveView",
    "QuietView",
    "trim",
]

_TRIM = 400
_SURROGATE = re.compile("[\ud800-\udfff]")


def trim(text: str | None, limit: int = _TRIM) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if not text:
        return ""
    if len(text) <= limit:
        return text
    return text[:limit] + f"... [{len(text) - limit} more characters]"


@dataclass(frozen=True, slots=True)
class Event:
    seq: int
    ts: str
    kind: str
    agent: str  # the agent id: "main" for the root, "main/1" for its first child
    fields: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "ts": self.ts,
            "kind": self.kind,
            "agent": self.agent,
            **self.fields,
        }


class EventSink(Protocol):
    def handle(self, event: Event) -> None: ...

    def close(self) -> None: ...


class EventBus:
    """Fans events out to sinks; thread-safe."""

    def __init__(self, sinks: list[EventSink] | None = None) -> None:
        self._sinks: list[EventSink] = list(sinks or [])
        self._lock = threading.RLock()
        self._seq = 0
        self._view: LiveView | None = next(
            (s for s in self._sinks if isinstance(s, LiveView)), None
        )

    def add(self, sink: EventSink) -> None:
        with self._lock:
            self._sinks.append(sink)
            if isinstance(sink, LiveView) and self._view is None:
                self._view = sink

    def emit(self, kind: str, agent: str, **fields: Any) -> Event:
        with self._lock:
            self._seq += 1
            stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
            event = Event(self._seq, stamp, kind, agent, fields)
            for sink in list(self._sinks):
                try:
                    sink.handle(event)
                except Exception as exc:  # noqa: BLE001 - a broken view must not stop the run
                    self._sinks.remove(sink)
                    print(
                        f"charter run: an event view failed and was closed: {exc}", file=sys.stderr
                    )
            return event

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Hold the live view still (no spinner) while a person is prompted.
        The lock is not held meanwhile: other agents keep reporting."""
        view = self._view
        if view is None:
            yield
            return
        view.pause()
        try:
            yield
        finally:
            view.resume()

    def close(self) -> None:
        with self._lock:
            for sink in self._sinks:
                try:
                    sink.close()
                except Exception:  # noqa: BLE001 - closing is best effort
                    pass


class JsonLinesSink:
    """One JSON object per line, flushed per event so a reader sees it at once."""

    def __init__(self, stream: IO[str], *, owns: bool = False) -> None:
        self._stream = stream
        self._owns = owns

    def handle(self, event: Event) -> None:
        line = json.dumps(event.to_json(), ensure_ascii=False, default=str)
        if _SURROGATE.search(line):
            # Text from a model can hold a lone surrogate, which no UTF-8
            # stream can carry: the JSON escapes can, and read back the same.
            line = json.dumps(event.to_json(), ensure_ascii=True, default=str)
        self._stream.write(line + "\n")
        self._stream.flush()

    def close(self) -> None:
        if self._owns:
            self._stream.close()


_DECISION_STYLE = {"allow": "green", "allowed": "yellow", "denied": "red", "deny": "red"}
_STATUS_STYLE = {"ok": "green", "timeout": "yellow"}


class LiveView:
    """A rich view of the run for a person (written to stderr, so that the
    answer alone can go to stdout or a pipe)."""

    def __init__(self, console: Console | None = None) -> None:
        from rich.console import Console

        self.console = console or Console(stderr=True, highlight=False)
        self._status: Status | None = None
        self._thinking: dict[str, str] = {}  # agent -> stage, while its model thinks
        # (agent, call id) -> how far a long tool call has got (tool_progress)
        self._running: dict[tuple[str, str], str] = {}
        self._paused = 0
        self._lock = threading.RLock()
        self._started: dict[str, float] = {}

    # -- the spinner ----------------------------------------------------------

    def _refresh_spinner(self) -> None:
        from rich.markup import escape

        wanted = bool(self._thinking or self._running) and not self._paused
        if wanted:
            parts = []
            if self._thinking:
                who = ", ".join(f"{a} in {s}" for a, s in sorted(self._thinking.items()))
                parts.append(f"[cyan]the model is thinking[/] ({escape(who)})")
            parts.extend(escape(line) for _key, line in sorted(self._running.items()))
            text = "\n".join(parts)
            if self._status is None:
                self._status = self.console.status(text, spinner="dots")
                self._status.start()
            else:
                self._status.update(text)
        elif self._status is not None:
            self._status.stop()
            self._status = None

    def pause(self) -> None:
        with self._lock:
            self._paused += 1
            self._refresh_spinner()

    def resume(self) -> None:
        with self._lock:
            self._paused = max(0, self._paused - 1)
            self._refresh_spinner()

    # -- events ----------------------------------------------------------------

    def handle(self, event: Event) -> None:
        with self._lock:
            self._handle(event)
            self._refresh_spinner()

    def _handle(self, event: Event) -> None:
        from rich.markup import escape
        from rich.panel import Panel
        from rich.text import Text

        f = event.fields
        who = f"[dim]{escape(event.agent)}[/] " if event.agent != "main" else ""
        kind = event.kind
        print_ = self.console.print
        if kind == "thinking":
            self._thinking[event.agent] = str(f.get("stage", ""))
        elif kind in ("model_turn", "model_error", "agent_finished", "run_finished"):
            self._thinking.pop(event.agent, None)
        if kind == "tool_progress":
            line = f"{_who_plain(event)}{f.get('tool')} running {_elapsed(f.get('elapsed_s'))}"
            if f.get("output_bytes"):
                line += f", {f.get('output_lines', 0)} lines ({_size(f.get('output_bytes'))})"
            if f.get("last_line"):
                line += f": {trim(str(f['last_line']), 100)}"
            self._running[(event.agent, str(f.get("call_id")))] = line
            return
        if kind in ("tool_finished", "agent_finished", "run_finished", "interrupted"):
            if kind == "tool_finished":
                self._running.pop((event.agent, str(f.get("call_id"))), None)
            else:
                self._running = {k: v for k, v in self._running.items() if k[0] != event.agent}
        if kind == "run_started":
            print_(
                f"[bold]charter run[/] agent [bold]{escape(str(f['agent_name']))}[/] "
                f"with {escape(str(f['model']))}"
                + ("  [yellow](--yolo: unattended)[/]" if f.get("yolo") else "")
            )
            print_(f"[dim]run directory: {escape(str(f['run_dir']))}[/]", soft_wrap=True)
        elif kind == "stage_entered":
            print_(
                Text.from_markup(
                    f"\n{who}[bold magenta]stage {escape(str(f['stage']))}[/] "
                    f"[dim]({escape(str(f.get('mode', '')))}, visit {f.get('visit', 1)})[/]"
                )
            )
        elif kind == "model_turn":
            text = str(f.get("text") or "").strip()
            calls = len(f.get("tool_calls") or [])
            if text or not calls:
                shown = escape(trim(text, 600)) if text else "[dim](no text, no tool call)[/]"
                print_(f"{who}[dim]iteration {f.get('iteration')}[/] {shown}")
            else:
                print_(f"{who}[dim]iteration {f.get('iteration')}: {calls} tool call(s)[/]")
        elif kind == "tool_finished":
            raw = str(f.get("decision", ""))
            decision = raw + (" (launch flag)" if f.get("rule") == "launch-flag" else "")
            status = str(f.get("status", ""))
            style = _STATUS_STYLE.get(status, "red")
            title = (
                f"{escape(str(f['tool']))} · [{_DECISION_STYLE.get(raw.split('→')[-1], 'white')}]"
                f"{escape(decision)}[/] · [{style}]{escape(status)}[/] · "
                f"{f.get('duration_ms', 0)} ms"
            )
            body = escape(trim(str(f.get("result", "")), 400)) or "[dim](no output)[/]"
            args = escape(trim(str(f.get("args", "")), 160))
            print_(
                Panel(
                    f"[dim]{args}[/]\n{body}" if args else body,
                    title=f"{who}{title}",
                    title_align="left",
                    border_style=style,
                    expand=False,
                )
            )
        elif kind == "gate_blocked":
            print_(
                f"{who}[yellow]gate on edge to {escape(str(f['to']))} holds "
                f"(attempt {f['attempt']} of {f['max_attempts']}):[/] {escape(str(f['reason']))}"
            )
        elif kind == "gate_forced":
            print_(
                f"{who}[yellow]gate on edge to {escape(str(f['to']))} forced open after "
                f"{f['attempts']} attempts[/]"
            )
        elif kind == "edge_taken":
            print_(
                f"{who}[magenta]→ {escape(str(f['to']))}[/] [dim]({escape(str(f['condition']))})[/]"
            )
        elif kind == "notice":
            print_(f"{who}[yellow]{escape(str(f['message']))}[/]")
        elif kind == "model_error":
            print_(f"{who}[red]model error:[/] {escape(str(f['message']))}")
        elif kind == "model_retry":
            print_(
                f"{who}[yellow]model request {f.get('attempt')} of {f.get('attempts')} failed:[/] "
                f"{escape(str(f.get('reason', '')))} [dim](retrying in "
                f"{float(f.get('delay_s') or 0):.1f} s)[/]"
            )
        elif kind == "approval_waiting":
            pass  # the prompt itself is on the screen
        elif kind == "approval_resumed":
            print_(
                f"{who}[dim]{escape(str(f.get('tool')))}: {escape(str(f.get('answer')))} "
                f"(after {float(f.get('waited_s') or 0):.1f} s)[/]"
            )
        elif kind == "agent_spawned":
            print_(
                f"{who}[cyan]spawned sub-agent {escape(str(f['child']))} "
                f"({escape(str(f['agent_name']))})[/]"
            )
        elif kind == "agent_finished" and event.agent != "main":
            print_(f"{who}[cyan]sub-agent finished: {escape(str(f['status']))}[/]")
        elif kind == "interrupted":
            print_("[red]interrupted: stopping the run[/]")
        elif kind == "run_finished":
            style = "green" if f.get("status") == "completed" else "red"
            print_(
                f"\n[{style}]run {escape(str(f['status']))}[/] "
                f"[dim]({escape(str(f.get('reason', '')))}; {f.get('turns', 0)} turns, "
                f"{f.get('tool_calls', 0)} tool calls)[/]"
            )
            for label, key in (("audit log", "audit"), ("events", "events"), ("output", "output")):
                if f.get(key):
                    # Never wrapped: the paths are meant to be copied.
                    print_(f"  {label}: {escape(str(f[key]))}", soft_wrap=True)

    def close(self) -> None:
        with self._lock:
            self._thinking.clear()
            self._running.clear()
            self._paused = 0
            self._refresh_spinner()


def _who_plain(event: Event) -> str:
    return f"{event.agent}: " if event.agent != "main" else ""


def _elapsed(seconds: Any) -> str:
    total = int(float(seconds or 0))
    return f"{total // 60}m{total % 60:02d}s" if total >= 60 else f"{total}s"


def _size(n: Any) -> str:
    value = float(n or 0)
    for unit in ("B", "KB", "MB"):
        if value < 1024:
            return f"{value:.0f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


class QuietView:
    """``--quiet``: only what went wrong, on stderr: model errors and retries,
    MCP server problems, and a run that did not complete."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self._stream = stream or sys.stderr

    def handle(self, event: Event) -> None:
        f = event.fields
        if event.kind == "model_error":
            self._stream.write(f"charter run: {event.agent}: model error: {f['message']}\n")
        elif event.kind == "notice" and str(f.get("message", "")).startswith("MCP "):
            # An MCP server that failed to start (or changed) is a problem too.
            self._stream.write(f"charter run: {event.agent}: {f['message']}\n")
        elif event.kind == "model_retry":
            self._stream.write(
                f"charter run: {event.agent}: model request {f['attempt']} of {f['attempts']} "
                f"failed, retrying in {f['delay_s']} s: {f['reason']}\n"
            )
        elif event.kind == "run_finished" and f.get("status") != "completed":
            self._stream.write(f"charter run: {f['status']}: {f.get('reason', '')}\n")

    def close(self) -> None:
        self._stream.flush()
