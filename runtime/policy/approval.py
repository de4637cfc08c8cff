"""Approvals: asking a person whether a call that needs one may run.

A call reaches an approval provider only after every earlier gate passed and
the permission gate answered ``ask`` (a refused or malformed call never wakes
anybody). Three providers:

- :class:`TerminalProvider` shows the tool, the redacted arguments, and for a
  shell call the command, the working directory, the resolved shell and (best
  effort) the command's own executable, and reads one answer: once, for this
  stage, for this run, deny, or deny with a message for the model.
- :class:`NonInteractiveProvider` answers from the launch flags alone: when a
  call still needs approval after ``--allow``/``--yolo`` were applied, nobody
  can give it, so it is denied with the flag that would have helped.
- :class:`HeadlessProvider` publishes the request and waits for an answer
  delivered from elsewhere until ``interaction_timeout_secs`` passes; expiry
  denies. Silence is never consent.

:class:`ApprovalCache` remembers "this stage" and "this run" answers for one
run. A shell call is keyed by its fingerprint (command, cwd, env overlay,
execution options) and any other call by its tool and canonical arguments, so
an approval never covers a different shape. Calls the guard marks ungrantable
and calls carrying secret bindings are never cached.
"""

from __future__ import annotations

import hashlib
import json
import queue
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, Protocol, TextIO

__all__ = [
    "AnswerKind",
    "ApprovalAnswer",
    "ApprovalCache",
    "ApprovalProvider",
    "ApprovalRequest",
    "HeadlessProvider",
    "NonInteractiveProvider",
    "REPLY_CHOICES",
    "TerminalProvider",
    "call_key",
]

AnswerKind = Literal["once", "stage", "run", "deny"]


# The request and the answer are NamedTuples: they are defined at every
# start-up, and a NamedTuple costs about a tenth of a frozen dataclass to
# define. The cache is mutable state compared by identity (eq=False).
class ApprovalRequest(NamedTuple):
    """What a person is asked to approve: the call, redacted, and why it needs asking."""

    request_id: str
    agent: str
    stage: str
    tool: str
    args_preview: str  # redacted, bounded
    reason: str  # why a person is asked (the gate's explanation)
    rule: str
    cache_key: str | None  # None: this call can only be approved once
    command: str | None = None  # shell calls: the redacted command line
    cwd: str | None = None
    env_keys: tuple[str, ...] = ()  # overlay names only, never values
    liftable_by: str = ""  # the launch flag that would have lifted this ask, if any
    # Shell calls: the file the configured shell resolves to on the child's
    # PATH, and best effort the file the command's first program runs from.
    # None when it cannot be told without running anything (``$CMD``, a
    # builtin, a name found nowhere).
    shell_executable: str | None = None
    command_executable: str | None = None
    # Every reason the call needs a person, when there are several (a shell
    # command whose parts each ask: ``touch a && pip install b``); ``reason``
    # is the first of them.
    reasons: tuple[str, ...] = ()
    # Text arguments shown as text rather than as escaped JSON (a file's
    # content, an edit's old and new text): (argument, redacted text).
    texts: tuple[tuple[str, str], ...] = ()

    @property
    def all_reasons(self) -> tuple[str, ...]:
        return self.reasons or (self.reason,)


class ApprovalAnswer(NamedTuple):
    """A person's (or a policy's) answer to an approval request, and who gave it."""

    kind: AnswerKind
    message: str = ""  # shown to the model with a denial
    source: str = ""  # who answered: terminal, flags, headless, cache, expiry

    @property
    def approved(self) -> bool:
        return self.kind != "deny"


class ApprovalProvider(Protocol):
    def request(self, req: ApprovalRequest) -> ApprovalAnswer: ...


def call_key(tool: str, args: Mapping[str, Any]) -> str:
    """Cache key for a non-shell call: tool plus the sha256 of its canonical
    arguments (sorted keys, compact), so any change of argument is a new key."""
    text = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return f"call:{tool}:{hashlib.sha256(text.encode('utf-8')).hexdigest()}"


@dataclass(slots=True, eq=False)
class ApprovalCache:
    """Run-scoped remembered answers. Entries for "this stage" name the stage
    they were given in and lapse when the session moves to another stage."""

    stage: str
    _run: set[str] = field(default_factory=set)
    _stage: dict[str, str] = field(default_factory=dict)  # key -> stage name
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def lookup(self, key: str | None) -> AnswerKind | None:
        if key is None:
            return None
        with self._lock:
            if key in self._run:
                return "run"
            if self._stage.get(key) == self.stage:
                return "stage"
        return None

    def remember(self, key: str | None, kind: AnswerKind) -> bool:
        """Store a "stage" or "run" answer; returns whether it was stored."""
        if key is None or kind not in ("stage", "run"):
            return False
        with self._lock:
            if kind == "run":
                self._run.add(key)
            else:
                self._stage[key] = self.stage
        return True

    def stage_changed(self, stage: str) -> None:
        with self._lock:
            self.stage = stage
            self._stage.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._run) + len(self._stage)


# What a person may type at an approval prompt, and the choice it stands
# for. Shared by every terminal prompt so the words mean the same everywhere.
REPLY_CHOICES: Mapping[str, str] = {
    "o": "once",
    "once": "once",
    "y": "once",
    "yes": "once",
    "s": "stage",
    "stage": "stage",
    "r": "run",
    "run": "run",
    "d": "deny",
    "deny": "deny",
    "n": "deny",
    "no": "deny",
    "m": "message",
    "message": "message",
}


class TerminalProvider:
    """Asks on a text terminal. Any answer it cannot read is a denial, and
    end of input is a denial: only an explicit yes runs the call."""

    def __init__(self, stdin: TextIO, stdout: TextIO, *, max_tries: int = 3) -> None:
        self._in = stdin
        self._out = stdout
        self._tries = max_tries

    def _show(self, req: ApprovalRequest) -> None:
        w = self._out.write
        w(f"\n-- approval needed: {req.tool} (agent {req.agent}, stage {req.stage})\n")
        for n, why in enumerate(req.all_reasons):
            w(f"   {'why' if n == 0 else 'and'}: {why}\n")
        if req.command is not None:
            w(f"   command: {req.command}\n")
            w(f"   cwd: {req.cwd or '.'}\n")
            w(f"   shell: {req.shell_executable or 'unknown'}\n")
            program = req.command_executable or "unknown (cannot be told before it runs)"
            w(f"   program: {program}\n")
            if req.env_keys:
                w(f"   env overlay: {', '.join(req.env_keys)} (values hidden)\n")
        w(f"   arguments: {req.args_preview}\n")
        for name, text in req.texts:
            w(f"   {name}:\n")
            for line in text.splitlines() or [""]:
                w(f"   | {line}\n")

    def request(self, req: ApprovalRequest) -> ApprovalAnswer:
        self._show(req)
        options = "[o]nce"
        if req.cache_key is not None:
            options += ", this [s]tage, this [r]un"
        options += ", [d]eny, deny with [m]essage"
        for _ in range(self._tries):
            self._out.write(f"   allow? {options}: ")
            self._out.flush()
            line = self._in.readline()
            if not line:
                self._out.write("\n   (no answer: denied)\n")
                return ApprovalAnswer("deny", "no answer was given", "terminal")
            choice = REPLY_CHOICES.get(line.strip().lower())
            if choice is None:
                self._out.write("   not understood\n")
                continue
            if choice in ("stage", "run") and req.cache_key is None:
                self._out.write("   this call can only be approved once\n")
                continue
            if choice == "message":
                self._out.write("   message for the agent: ")
                self._out.flush()
                text = self._in.readline().strip()
                return ApprovalAnswer("deny", text, "terminal")
            return ApprovalAnswer(choice, "", "terminal")  # type: ignore[arg-type]
        return ApprovalAnswer("deny", "no usable answer was given", "terminal")


class NonInteractiveProvider:
    """No person is there. Launch flags were applied before this point, so any
    call still asking is denied, naming the flag that would have lifted it."""

    def request(self, req: ApprovalRequest) -> ApprovalAnswer:
        if req.liftable_by:
            hint = f"; launch with {req.liftable_by} to allow it"
        else:
            hint = "; no launch flag can allow it, only a person"
        return ApprovalAnswer(
            "deny", f"needs approval and nobody can give it ({req.reason}){hint}", "flags"
        )


class HeadlessProvider:
    """Publishes each request through ``publish`` and waits for :meth:`answer`
    to be called with the same request id, for at most ``timeout_s`` seconds
    (0 waits without limit, as ``interaction_timeout_secs = 0`` says).
    When the time runs out the call is denied."""

    def __init__(
        self,
        timeout_s: float,
        publish: Callable[[ApprovalRequest], None] | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._timeout = timeout_s
        self._publish = publish
        self._clock = clock
        self._inbox: queue.Queue[tuple[str, ApprovalAnswer]] = queue.Queue()

    def answer(self, request_id: str, answer: ApprovalAnswer) -> None:
        self._inbox.put((request_id, answer))

    def request(self, req: ApprovalRequest) -> ApprovalAnswer:
        if self._publish is not None:
            self._publish(req)
        deadline = None if self._timeout <= 0 else self._clock() + self._timeout
        while True:
            remaining = None if deadline is None else deadline - self._clock()
            if remaining is not None and remaining <= 0:
                return ApprovalAnswer(
                    "deny",
                    f"nobody answered within {self._timeout:g} s; an unanswered request is "
                    "a denial",
                    "expiry",
                )
            try:
                rid, ans = self._inbox.get(timeout=remaining)
            except queue.Empty:
                continue  # the loop head turns the timeout into a denial
            if rid != req.request_id:
                continue  # an answer to an older request: it does not approve this one
            if ans.kind in ("stage", "run") and req.cache_key is None:
                ans = ApprovalAnswer("once", ans.message, ans.source or "headless")
            return ApprovalAnswer(ans.kind, ans.message, ans.source or "headless")
