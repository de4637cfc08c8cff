"""People in the loop: the terminal prompts of a run.

One :class:`Prompter` per run owns the conversation with the person at the
terminal. Every wait it makes is bounded by the plan's
``interaction_timeout_secs`` (0 waits without limit) and by the run's cancel
event; an expired wait is a refusal, never consent. Input is read by one
background thread into a queue (:class:`LineSource`) so that a wait can time
out and be cancelled, which a blocking ``readline`` cannot.

The same prompter serves two masters, one prompt at a time:

- :class:`PromptApprovals`, the approval provider for calls the gates say
  need a person (once, this stage, this run, deny, deny with a message);
- :func:`people_tools`, the implementations of the human-in-the-loop and
  review tools (``ask_user_*``, ``clarify``, ``present_for_review``,
  ``edit_document``). ``edit_document`` opens ``$EDITOR`` when it is set.

End of input answers nothing: approvals fall back to the non-interactive
provider's denial (naming the flag that would help), questions are refused.
"""

from __future__ import annotations

import os
import queue
import shlex
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from charter.runtime.policy.approval import (
    REPLY_CHOICES,
    ApprovalAnswer,
    ApprovalRequest,
    NonInteractiveProvider,
)
from charter.runtime.results import ToolResult, refusal
from charter.runtime.tools.registry import NO_PATHS, Registry, register

if TYPE_CHECKING:
    from rich.console import Console

    from charter.runtime.run.events import EventBus
    from charter.runtime.tools.base import ToolRuntime

__all__ = [
    "LineSource",
    "ask_checkpoint",
    "edit_text",
    "PromptApprovals",
    "Prompter",
    "Reply",
    "people_tools",
]

_POLL_S = 0.1
_MAX_TRIES = 3
_MAX_HELPS = 10


class LineSource:
    """Lines of a text stream, read by a daemon thread so waits can time out.
    ``None`` in the queue marks the end of input."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._eof = False
        self._started = False
        self._lock = threading.Lock()

    def _start(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
        thread = threading.Thread(target=self._pump, name="charter-stdin", daemon=True)
        thread.start()

    def _pump(self) -> None:
        try:
            while True:
                line = self._stream.readline()
                if not line:
                    break
                self._queue.put(line.rstrip("\r\n"))
        except (OSError, ValueError):
            pass  # a closed stream ends input like EOF does
        self._queue.put(None)

    def read(
        self, deadline: float | None, cancel: threading.Event
    ) -> str | Literal["eof", "timeout", "cancelled"]:
        if self._eof:
            return "eof"
        self._start()
        while True:
            if cancel.is_set():
                return "cancelled"
            wait = _POLL_S
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return "timeout"
                wait = min(wait, left)
            try:
                line = self._queue.get(timeout=wait)
            except queue.Empty:
                continue
            if line is None:
                self._eof = True
                return "eof"
            return line


@dataclass(frozen=True, slots=True)
class Reply:
    """What came back from one prompt: ``text``, or why there is none."""

    text: str | None
    why: Literal["ok", "eof", "timeout", "cancelled"] = "ok"


class Prompter:
    """Shows questions on the console and reads answers, one prompt at a time."""

    def __init__(
        self,
        lines: LineSource,
        *,
        console: Console | None = None,
        timeout_s: float,
        cancel: threading.Event,
        bus: EventBus | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        from rich.console import Console

        self.lines = lines
        self.console = console or Console(stderr=True, highlight=False)
        self.timeout_s = timeout_s
        self.cancel = cancel
        self.bus = bus
        self.environ = os.environ if environ is None else environ
        self._lock = threading.Lock()

    def _deadline(self) -> float | None:
        return None if self.timeout_s <= 0 else time.monotonic() + self.timeout_s

    def session(self) -> _Session:
        return _Session(self)

    def expired_text(self) -> str:
        return (
            f"nobody answered within {self.timeout_s:g} s (interaction_timeout_secs); "
            "an unanswered prompt is a refusal, never consent"
        )


class _Session:
    """One person-facing exchange: holds the prompter's lock and pauses the
    live view for its duration; every read shares one deadline."""

    def __init__(self, prompter: Prompter) -> None:
        self.p = prompter
        self.deadline: float | None = None
        self._pause: Any = None
        self._locked = False

    def __enter__(self) -> _Session:
        # Waiting for the lock counts against the deadline too: a prompt queued
        # behind another one still expires on time.
        self.deadline = self.p._deadline()
        while not self.p._lock.acquire(timeout=_POLL_S):
            if self.p.cancel.is_set() or (
                self.deadline is not None and time.monotonic() >= self.deadline
            ):
                self.deadline = time.monotonic() - 1  # every read now times out
                self._locked = False
                return self
        self._locked = True
        if self.p.bus is not None:
            self._pause = self.p.bus.paused()
            self._pause.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pause is not None:
            self._pause.__exit__(None, None, None)
        if self._locked:
            self.p._lock.release()

    def show(self, renderable: Any) -> None:
        self.p.console.print(renderable)

    def ask(self, label: str) -> Reply:
        from rich.markup import escape

        if not self._locked:
            return Reply(None, "cancelled" if self.p.cancel.is_set() else "timeout")
        self.p.console.print(f"[bold cyan]?[/] {escape(label)} ", end="")
        got = self.p.lines.read(self.deadline, self.p.cancel)
        if got in ("eof", "timeout", "cancelled"):
            self.p.console.print(f"[dim]({'no answer' if got != 'cancelled' else 'cancelled'})[/]")
            return Reply(None, got)  # type: ignore[arg-type]
        return Reply(got)

    def ask_block(self, label: str) -> Reply:
        """Several lines, ended by a line holding only '.' (or end of input)."""
        first = self.ask(label)
        if first.text is None or first.text == "":
            return first
        lines = [] if first.text == "." else [first.text]
        if first.text != ".":
            while True:
                got = self.p.lines.read(self.deadline, self.p.cancel)
                if got in ("timeout", "cancelled"):
                    return Reply(None, got)  # type: ignore[arg-type]
                if got == "eof" or got == ".":
                    break
                lines.append(got)
        return Reply("\n".join(lines))


# --------------------------------------------------------------------------- approvals


class PromptApprovals:
    """The approval provider of an attended run: asks at the terminal, with
    the interaction timeout; expiry and unreadable answers deny."""

    def __init__(self, prompter: Prompter) -> None:
        self._p = prompter

    def request(self, req: ApprovalRequest) -> ApprovalAnswer:
        from rich.markup import escape
        from rich.panel import Panel

        reasons = req.all_reasons
        if len(reasons) == 1:
            lines = [f"[bold]why:[/] {escape(reasons[0])}"]
        else:
            # Every part that needs a person, not only the first one found.
            lines = ["[bold]why:[/]", *(f"  - {escape(r)}" for r in reasons)]
        if req.command is not None:
            lines.append(f"[bold]command:[/] {escape(req.command)}")
            lines.append(f"[bold]cwd:[/] {escape(req.cwd or '.')}")
            # What would actually run, as far as it can be told beforehand.
            lines.append(f"[bold]shell:[/] {escape(req.shell_executable or 'unknown')}")
            program = req.command_executable or "unknown (cannot be told before it runs)"
            lines.append(f"[bold]program:[/] {escape(program)}")
            if req.env_keys:
                lines.append(f"[bold]env overlay:[/] {escape(', '.join(req.env_keys))}")
        lines.append(f"[bold]arguments:[/] {escape(req.args_preview)}")
        for name, text in req.texts:
            # As the file will hold it, not as escaped JSON.
            lines.append(f"[bold]{escape(name)}:[/]")
            lines.extend(f"[dim]│[/] {escape(line)}" for line in (text.splitlines() or [""]))
        options = "[o]nce"
        if req.cache_key is not None:
            options += ", this [s]tage, this [r]un"
        options += ", [d]eny, deny with [m]essage"
        with self._p.session() as s:
            s.show(
                Panel(
                    "\n".join(lines),
                    title=f"approval needed: {escape(req.tool)} "
                    f"(agent {escape(req.agent)}, stage {escape(req.stage)})",
                    title_align="left",
                    border_style="yellow",
                    expand=False,
                )
            )
            attempts = helps = 0
            while attempts < _MAX_TRIES:
                reply = s.ask(f"allow? {options}:")
                if reply.why == "eof":
                    return NonInteractiveProvider().request(req)
                if reply.why == "timeout":
                    return ApprovalAnswer("deny", self._p.expired_text(), "expiry")
                if reply.why == "cancelled" or reply.text is None:
                    return ApprovalAnswer("deny", "the run was cancelled", "cancelled")
                said = reply.text.strip().lower()
                if said in ("?", "h", "help") and helps < _MAX_HELPS:
                    # Asking what the letters mean is no wrong answer: it
                    # does not use up a try (a bounded number of times).
                    helps += 1
                    s.show(_approval_help(req.cache_key is not None))
                    continue
                attempts += 1
                choice = REPLY_CHOICES.get(said)
                if choice is None:
                    s.show("[yellow]not understood[/] (? shows what each answer does)")
                    continue
                if choice in ("stage", "run") and req.cache_key is None:
                    s.show("[yellow]this call can only be approved once[/]")
                    continue
                if choice == "message":
                    note = s.ask("message for the agent:")
                    return ApprovalAnswer("deny", note.text or "", "terminal")
                return ApprovalAnswer(choice, "", "terminal")  # type: ignore[arg-type]
        return ApprovalAnswer("deny", "no usable answer was given", "terminal")


def _approval_help(rememberable: bool) -> str:
    lines = [
        "  o  allow this call once",
        "  d  deny it; the agent is told it was denied",
        "  m  deny it with a message the agent reads (say what to do instead)",
    ]
    if rememberable:
        lines[1:1] = [
            "  s  allow it, and the same call again, for the rest of this stage",
            "  r  allow it, and the same call again, for the rest of this run",
        ]
    else:
        lines.append("  (this call can only be approved once: it is never remembered)")
    return "\n".join(lines)


# --------------------------------------------------------------------------- tools


def _no_answer(p: Prompter, reply: Reply, what: str) -> ToolResult:
    if reply.why == "timeout":
        return refusal("denied", "dispatch", "interaction-expired", f"{what}: {p.expired_text()}")
    if reply.why == "cancelled":
        return refusal(
            "denied", "dispatch", "interaction-cancelled", f"{what}: the run is stopping"
        )
    return refusal(
        "denied",
        "dispatch",
        "interaction-no-input",
        f"{what}: nobody is there to answer (the input has ended); decide without the user",
    )


def _ask_text(p: Prompter, prompt: str) -> ToolResult:
    from rich.markup import escape

    with p.session() as s:
        s.show(f"\n[bold cyan]The agent asks:[/] {escape(prompt)}")
        reply = s.ask("your answer:")
    if reply.text is None:
        return _no_answer(p, reply, "the question was not answered")
    return ToolResult("ok", f"The user answered: {reply.text}", data={"answer": reply.text})


def _ask_choice(p: Prompter, prompt: str, options: list[str]) -> ToolResult:
    from rich.markup import escape

    with p.session() as s:
        s.show(f"\n[bold cyan]The agent asks:[/] {escape(prompt)}")
        for n, option in enumerate(options, 1):
            s.show(f"  [bold]{n}[/]. {escape(option)}")
        for _ in range(_MAX_TRIES):
            reply = s.ask(f"choose 1-{len(options)}:")
            if reply.text is None:
                return _no_answer(p, reply, "the choice was not made")
            text = reply.text.strip()
            picked: str | None = None
            if text.isdigit() and 1 <= int(text) <= len(options):
                picked = options[int(text) - 1]
            else:
                matches = [o for o in options if o.lower() == text.lower()]
                picked = matches[0] if matches else None
            if picked is not None:
                return ToolResult("ok", f"The user chose: {picked}", data={"answer": picked})
            s.show("[yellow]answer with the number or the text of one option[/]")
    return refusal("denied", "dispatch", "interaction-unreadable", "no usable choice was given")


def _ask_confirm(p: Prompter, prompt: str) -> ToolResult:
    from rich.markup import escape

    with p.session() as s:
        s.show(f"\n[bold cyan]The agent asks:[/] {escape(prompt)}")
        for _ in range(_MAX_TRIES):
            reply = s.ask("[y]es or [n]o:")
            if reply.text is None:
                return _no_answer(p, reply, "the question was not answered")
            word = reply.text.strip().lower()
            if word in ("y", "yes"):
                return ToolResult("ok", "The user answered: yes", data={"answer": True})
            if word in ("n", "no"):
                return ToolResult("ok", "The user answered: no", data={"answer": False})
            s.show("[yellow]answer y or n[/]")
    return refusal("denied", "dispatch", "interaction-unreadable", "no usable answer was given")


def _review(p: Prompter, title: str, markdown: str) -> ToolResult:
    from rich.markdown import Markdown
    from rich.markup import escape
    from rich.panel import Panel

    with p.session() as s:
        s.show(Panel(Markdown(markdown), title=f"for review: {escape(title)}", title_align="left"))
        reply = s.ask("press Enter or type 'approve' to approve, or write your feedback:")
    if reply.text is None:
        return _no_answer(p, reply, "the review got no answer")
    text = reply.text.strip()
    if text.lower() in ("", "a", "y", "yes", "approve", "approved", "ok"):
        return ToolResult("ok", f"The user approved '{title}'.", data={"approved": True})
    return ToolResult(
        "ok",
        f"The user did not approve '{title}' and asked for changes: {text}",
        data={"approved": False, "feedback": text},
    )


def _edit(p: Prompter, content: str, prompt: str | None, scratch: Path) -> ToolResult:
    from rich.markup import escape
    from rich.panel import Panel

    editor = p.environ.get("VISUAL") or p.environ.get("EDITOR")
    with p.session() as s:
        if prompt:
            s.show(f"\n[bold cyan]The agent asks you to edit a document:[/] {escape(prompt)}")
        if editor:
            return _edit_with_editor(p, s, editor, content, scratch)
        s.show(Panel(escape(content) or "[dim](empty)[/]", title="document", title_align="left"))
        reply = s.ask_block(
            "press Enter to keep it, or type the new text and end it with a line holding '.':"
        )
    if reply.text is None:
        return _no_answer(p, reply, "the document was not edited")
    if reply.text == "":
        return ToolResult(
            "ok", "The user kept the document unchanged.\n\n" + content, data={"document": content}
        )
    return ToolResult(
        "ok", "The user's version of the document:\n\n" + reply.text, data={"document": reply.text}
    )


def _edit_with_editor(
    p: Prompter, s: _Session, editor: str, content: str, scratch: Path
) -> ToolResult:
    scratch.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix="edit-", suffix=".md", dir=scratch)
    path = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(content)
        try:
            argv = [*shlex.split(editor), str(path)]
        except ValueError as exc:
            return refusal("error", "dispatch", "editor-unusable", f"$EDITOR cannot be read: {exc}")
        s.show(f"[dim]opening {argv[0]} ...[/]")
        try:
            proc = subprocess.Popen(argv)  # noqa: S603 - the person's own editor
        except OSError as exc:
            return refusal(
                "error", "dispatch", "editor-unusable", f"the editor could not start: {exc}"
            )
        while proc.poll() is None:
            expired = s.deadline is not None and time.monotonic() >= s.deadline
            if expired or p.cancel.is_set():
                proc.kill()
                proc.wait()
                return _no_answer(p, Reply(None, "timeout" if expired else "cancelled"), "the edit")
            time.sleep(_POLL_S)
        if proc.returncode != 0:
            return refusal(
                "denied",
                "dispatch",
                "editor-failed",
                f"the editor exited with status {proc.returncode}; the document was not changed",
            )
        edited = path.read_text(encoding="utf-8", errors="replace")
    finally:
        path.unlink(missing_ok=True)
    if edited == content:
        return ToolResult(
            "ok", "The user kept the document unchanged.\n\n" + content, data={"document": content}
        )
    return ToolResult(
        "ok", "The user's version of the document:\n\n" + edited, data={"document": edited}
    )


def ask_checkpoint(
    p: Prompter, prompt: str, style: str, options: list[str], body: str, *, required: bool
) -> str | None:
    """An interaction point shown to the person: the stage's answer under
    review (``body``), then the question in its style. The chosen option or
    the typed text; None when nobody answered (which is never approval)."""
    from rich.markup import escape
    from rich.panel import Panel

    if body.strip():
        with p.session() as s:
            s.show(Panel(escape(body), title="for your review", title_align="left"))
    if style == "multiple_choice" and options:
        result = _ask_choice(p, prompt, options)
    elif style == "confirm":
        result = _ask_confirm(p, prompt)
        if result.ok and isinstance(result.data.get("answer"), bool):
            return "yes" if result.data["answer"] else "no"
    else:
        result = _ask_text(p, prompt)
    answer = result.data.get("answer") if result.ok else None
    if not isinstance(answer, str) or (required and not answer.strip()):
        return None
    return answer


def edit_text(p: Prompter, content: str, prompt: str, scratch: Path) -> str | None:
    """The person's edit of ``content`` (unchanged when they keep it), or
    None when nobody answered."""
    result = _edit(p, content, prompt, scratch)
    document = result.data.get("document") if result.ok else None
    return document if isinstance(document, str) else None


def people_tools(prompter: Prompter, scratch: Path) -> Registry:
    """The registry of the human-in-the-loop tools for one run
    (``human.ask``, ``human.review``), each dispatching on the canonical tool
    name. None takes a path. The arguments were checked against the tool's
    schema by the gates."""

    def ask(
        args: Mapping[str, Any], rt: ToolRuntime, *, tool: str | None = None, approved: bool = False
    ) -> ToolResult:
        if tool == "ask_user_text":
            return _ask_text(prompter, str(args["prompt"]))
        if tool == "ask_user_choice":
            return _ask_choice(prompter, str(args["prompt"]), [str(o) for o in args["options"]])
        if tool == "ask_user_confirm":
            return _ask_confirm(prompter, str(args["prompt"]))
        if tool == "clarify":
            choices = [str(c) for c in args.get("choices") or []]
            if len(choices) >= 2:
                return _ask_choice(prompter, str(args["question"]), choices)
            return _ask_text(prompter, str(args["question"]))
        return refusal(
            "unavailable", "dispatch", "unknown-tool", f"{tool!r} is not a question tool"
        )

    def review(
        args: Mapping[str, Any], rt: ToolRuntime, *, tool: str | None = None, approved: bool = False
    ) -> ToolResult:
        if tool == "present_for_review":
            return _review(prompter, str(args["title"]), str(args["markdown"]))
        if tool == "edit_document":
            prompt = args.get("prompt")
            return _edit(prompter, str(args["content"]), str(prompt) if prompt else None, scratch)
        return refusal("unavailable", "dispatch", "unknown-tool", f"{tool!r} is not a review tool")

    return Registry(
        [
            register(
                "human.ask",
                ask,
                serves={
                    "ask_user_text": NO_PATHS,
                    "ask_user_choice": NO_PATHS,
                    "ask_user_confirm": NO_PATHS,
                    "clarify": NO_PATHS,
                },
            ),
            register(
                "human.review",
                review,
                serves={"present_for_review": NO_PATHS, "edit_document": NO_PATHS},
            ),
        ]
    )
