"""Interaction points: the checkpoints of an ``interactive_points`` stage.

Before such a stage may move on (the model picks an edge, takes its always
edge, or ends the run with its answer), each of its points is put to the
person in order, showing the stage's answer under review, as Leviath does at
a stage boundary:

* an answer among ``abort_options`` ends the run;
* one among ``edit_options`` lets the person edit the answer, and the same
  point is shown again with their text (which also replaces the point's
  ``document_region``);
* one with a directive sends the directive to the model and the stage goes
  on (the point is asked again when the stage next tries to move);
* anything else approves, and the next point is asked.

Revising (edits and directives) at one point is bounded: after
:data:`MAX_REVISION_ROUNDS` rounds the stage proceeds. With nobody there
(``--yolo``, no terminal) a point approves itself unless it declares
``unattended = "ask"``, which stops the run. Where Charter is stricter than
Leviath: a person who was asked and did not answer in time (or closed the
input) approves nothing; the run stops, as every other unanswered prompt of
Charter's is a refusal, never consent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from charter.runtime.plan import InteractionPoint
from charter.runtime.run.context import AgentStatus
from charter.runtime.run.people import ask_checkpoint, edit_text
from charter.runtime.tools.context import ContextEntry, RunStore

if TYPE_CHECKING:
    from charter.runtime.run.people import Prompter

__all__ = ["MAX_REVISION_ROUNDS", "Checkpoints", "Step"]

MAX_REVISION_ROUNDS = 4

# What the loop does next: move on, stay in the stage, or end the run.
Step = Literal["go", "stay"] | tuple[AgentStatus, str]

_REVISED = (
    "The text above was revised before it was approved. Work from the approved text as "
    "written: a conclusion drawn from the earlier version (that something is already done, "
    "say) may no longer hold and should be checked again."
)


def _norm(text: str) -> str:
    """An option label as it is compared: dashes folded, blanks collapsed."""
    for dash in ("\u2014", "\u2013", "\u2212", "\u2015"):
        text = text.replace(dash, "-")
    return " ".join(text.split())


def _among(options: Sequence[str], answer: str) -> bool:
    return answer in options or _norm(answer) in {_norm(o) for o in options}


def _directive(point: InteractionPoint, answer: str) -> str | None:
    table = dict(point.directives)
    if answer in table:
        return table[answer]
    return next((d for o, d in point.directives if _norm(o) == _norm(answer)), None)


@dataclass(slots=True, eq=False)
class Checkpoints:
    """Where one visit of a stage stands with its points."""

    points: tuple[InteractionPoint, ...]
    person: Prompter | None  # None: nobody is there to ask
    scratch: Path  # where an editor's file goes
    store: RunStore
    say: Callable[[str], None]  # a line of the conversation, as the person's
    emit: Callable[..., None]
    index: int = 0
    rounds: int = 0
    edited: str | None = None  # the person's edit, shown at the next asking

    def before_leaving(self, answer: str) -> Step:
        """Ask what is left to ask before the stage may move on; ``answer`` is
        the stage's latest text, the one under review."""
        while self.index < len(self.points):
            point = self.points[self.index]
            body = self.edited if self.edited is not None else answer
            self._publish(point, body)
            self.edited = None
            reply = self._ask(point, body)
            if not isinstance(reply, str):
                return reply
            if point.style == "confirm" and reply == "no":
                # (Leviath reads a declined confirm as no answer, which
                # approves; a person who said no approved nothing)
                return ("cancelled", f"the person declined checkpoint '{point.name}'")
            if _among(point.abort_options, reply):
                return ("cancelled", f"the person chose {reply!r} at checkpoint '{point.name}'")
            if reply:
                self.say(f"[{point.name}] {reply}")
            capped = self.rounds + 1 >= MAX_REVISION_ROUNDS
            if _among(point.edit_options, reply):
                if capped:
                    self.index = len(self.points)
                    break
                self.rounds += 1
                edited = self._edit(point, body)
                if edited is not None:
                    self.say(
                        f"[{point.name}] edited the text directly. Adopt this exact text as the "
                        f"authoritative version:\n{edited}"
                    )
                    self.edited = edited
                continue
            directive = _directive(point, reply)
            if directive is not None:
                if capped:
                    self.index = len(self.points)
                    break
                self.rounds += 1
                self.say(f"[{point.name}] directive: {directive}")
                return "stay"
            if self.rounds:
                self.say(f"[{point.name}] {_REVISED}")
            self.index += 1
            self.rounds = 0
        return "go"

    def _publish(self, point: InteractionPoint, body: str) -> None:
        # the reviewed text is the authoritative one in its section, so a
        # revision builds on it (a person's edit marked as theirs)
        if point.document_region is None or not body.strip():
            return
        text = body if self.edited is None else f"[revised by the user: keep these changes]\n{body}"
        with self.store.lock:
            self.store.regions[point.document_region] = [ContextEntry(text)]

    def _ask(self, point: InteractionPoint, body: str) -> str | tuple[AgentStatus, str]:
        if self.person is None:
            if point.unattended == "ask":
                return (
                    "failed",
                    f"checkpoint '{point.name}' needs a person and nobody is there to answer; "
                    "the run stopped rather than approve it unread",
                )
            self.emit("checkpoint", point=point.name, answer="(approved: unattended run)")
            return ""

        options = list(point.options)
        reply = ask_checkpoint(
            self.person,
            point.prompt or f"Checkpoint '{point.name}'",
            point.style,
            options,
            body,
            required=point.required,
        )
        if reply is None:
            return (
                "failed",
                f"checkpoint '{point.name}' went unanswered; an unanswered checkpoint approves "
                "nothing, so the run stopped",
            )
        self.emit("checkpoint", point=point.name, answer=reply)
        return reply

    def _edit(self, point: InteractionPoint, body: str) -> str | None:
        if self.person is None:
            return None

        return edit_text(self.person, body, point.prompt, self.scratch)
