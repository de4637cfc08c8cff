"""The guard's working state for one reading of one command line, and its
size limits.

A :class:`State` is what every other module of the guard passes around: the
findings and writes gathered so far, where the command stands (its working
directory as far as the guard can follow it through ``cd``), the token budget
shared by every nested text, and where :func:`~.entry.judge` reports the
simple commands read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from charter.runtime import deadline
from charter.runtime.plan.vocabulary import Permission
from charter.runtime.shell.policy import Finding, ShellPolicy, Write
from charter.runtime.shell.report import Collector
from charter.runtime.shell.syntax import ParseResult, SimpleCommand, Subshell

__all__ = ["MAX_COMMAND_CHARS", "MAX_TOKENS", "PARSE_COST", "State", "Walker", "Work", "clip"]

# The guard's size limits. A command line longer than MAX_COMMAND_CHARS is
# "ask" (`too-long`) without being read; each reading of a shorter one may
# lex at most MAX_TOKENS tokens in all (the command, and every nested script,
# substitution and salvaged piece in it), past which it is "ask" too. Both
# keep every decision within a small, linear time on any input; neither can
# make a command allowed.
MAX_COMMAND_CHARS = 65_536
MAX_TOKENS = 12_000
# What one parse costs beyond its tokens, in tokens: many tiny nested texts
# (backticks, salvaged pieces) cost more than their tokens say.
PARSE_COST = 20


Job = Callable[[], None]


@dataclass(eq=False)
class Work:
    """The guard's explicit stack. Judging one command finds more to judge
    inside it (a subshell's body, a substitution, the command a wrapper runs,
    the script of ``bash -c`` or ``eval``); each is a job started with
    :meth:`State.spawn` and run by :meth:`State.drive` after the job that
    found it, before that job's later siblings: the order a nested call would
    give, without the depth of the input ever becoming depth of the Python
    stack (a 5,000-deep ``$(``...``)`` is judged, not an internal error)."""

    stack: list[Job] = field(default_factory=list)
    fresh: list[Job] = field(default_factory=list)


class Walker(Protocol):
    """The way back into the command walk for text found inside one command
    (a ``bash -c`` script, a heredoc, an argument a program may evaluate).
    :mod:`.commands` is the one implementation; :mod:`.entry` gives it to
    each state, so the rules that find such text (:mod:`.argv`,
    :mod:`.confine`) do not import the walk that imports them."""

    def nested(
        self,
        st: State,
        script: str,
        span: tuple[int, int],
        then: Callable[[State], None] | None = None,
    ) -> None: ...

    def salvage(
        self,
        st: State,
        text: str,
        span: tuple[int, int],
        *,
        opaque: bool = True,
        unquote: bool = False,
    ) -> None: ...

    def report_embedded(self, st: State, text: str) -> None: ...

    def heredoc_body(self, st: State, body: str, span: tuple[int, int]) -> None: ...


# Mutable working state, compared by identity (nothing compares two by value).
@dataclass(eq=False)
class State:
    """What the guard gathers while walking one command: findings, writes, flags."""

    text: str
    cwd: str | None
    ws: str
    ws_real: str
    policy: ShellPolicy
    findings: list[Finding] = field(default_factory=list)
    writes: list[Write] = field(default_factory=list)
    # paths (absolute, before symlinks) an earlier command of this line may
    # have turned into a symlink (ln, cp, mv, tar ...): what a later write
    # through them reaches cannot be known now
    made_links: set[str] = field(default_factory=set)
    ungrantable: bool = False
    safe_hits: list[str] = field(default_factory=list)
    commands: int = 0
    # after `cd ~/x` or a bare `cd`: the cwd as a ~ path (a place in the home directory)
    home_cwd: str | None = None
    # $OLDPWD, once a `cd` in this command has set it (None: not known)
    prev_cwd: str | None = None
    # where the simple command being judged sits: (its list, its index, the
    # compound depth), for sequential
    place: tuple[tuple[SimpleCommand | Subshell, ...], int, int] | None = None
    # what `cd` does and what $PWD holds can be changed by the command itself
    # (CDPATH, cdable_vars, set -P, a trap, a function named cd, PWD=...):
    # then the guard does not follow them. None: not looked at yet (the
    # whole command line, ``root``, is searched once, when first needed).
    root: str = ""
    cd_trusted: bool | None = None
    pwd_trusted: bool | None = None

    def location(self) -> tuple[str | None, str | None, str | None]:
        return self.cwd, self.home_cwd, self.prev_cwd

    def restore(self, saved: tuple[str | None, str | None, str | None]) -> None:
        self.cwd, self.home_cwd, self.prev_cwd = saved

    # set by judge(): where the simple commands judged are reported
    seen: Collector | None = None
    # the parse, when its text had line continuations: maps offsets back
    spliced: ParseResult | None = None
    # tokens this reading may still lex (shared with every nested state)
    budget: list[int] = field(default_factory=lambda: [MAX_TOKENS])
    # real paths already resolved in this decision (shared with every nested
    # state; see paths.real_below)
    resolved: dict[str, str] = field(default_factory=dict)
    # the jobs still to run (shared with every nested state)
    work: Work = field(default_factory=Work)
    # the command walk, for nested text (set by entry; shared with every nested state)
    walker: Walker | None = None

    def walk(self) -> Walker:
        """The command walk this state was made by, for text found inside it."""
        assert self.walker is not None, "a State judging commands is made by entry"
        return self.walker

    def spawn(self, job: Job) -> None:
        """Run ``job`` once the job running now has returned (see :class:`Work`)."""
        self.work.fresh.append(job)

    def drive(self, job: Job) -> None:
        """Run ``job`` and everything it spawns, to the end, before returning.
        Safe to call from inside a job: it runs only what it was given."""
        work = self.work
        outer = work.fresh
        stack = work.stack
        base = len(stack)
        stack.append(job)
        fresh: list[Job] = []
        work.fresh = fresh
        steps = 0
        while len(stack) > base:
            stack.pop()()
            # (a drive inside the job set its own list, then put this one back)
            if fresh:
                fresh.reverse()
                stack.extend(fresh)
                fresh.clear()
            steps += 1
            if not steps & 63:
                deadline.check()  # (serve: stop work whose answer was already given)
        work.fresh = outer

    def sub(self, text: str) -> State:
        """A state for a text found inside this one: the same places (the
        working directory and what is known of cd and $PWD), the same token
        budget and the same report."""
        sub = State(
            text,
            self.cwd,
            self.ws,
            self.ws_real,
            self.policy,
            seen=self.seen,
            budget=self.budget,
            resolved=self.resolved,
            work=self.work,
            walker=self.walker,
        )
        sub.home_cwd, sub.prev_cwd, sub.root = self.home_cwd, self.prev_cwd, self.root
        sub.cd_trusted, sub.pwd_trusted = self.cd_trusted, self.pwd_trusted
        # the same set: a link made before `bash -c '...'` is still there inside it
        sub.made_links = self.made_links
        return sub

    def add(self, decision: Permission, rule: str, span: tuple[int, int], message: str) -> None:
        self.findings.append(Finding(decision, rule, span, message))


def clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
