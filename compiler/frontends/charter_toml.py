"""``charter.toml``: a project's own settings for Charter.

It lives at the project root or in an agent directory and holds two things:

* ``[lint] ignore``: rules (codes or names) ``charter validate`` silences for
  the project, on top of inline ``# charter: ignore[...]`` comments;
* ``[[expect]]``: policy self-tests, each a tool call and the decision the
  compiled policy must give it, checked by ``charter validate`` (like Codex's
  ``match``/``not_match`` examples or ``opa test``).
"""

from pathlib import Path
from typing import Any, Self

from pydantic import Field, model_validator

from charter.compiler.frontends.base import Loaded, load_document
from charter.compiler.frontends.validation import InputModel, invalid_value, thaw
from charter.runtime.plan.vocabulary import Permission

__all__ = ["Expectation", "LintSettings", "ProjectSettings", "SETTINGS_FILE", "load_settings"]

SETTINGS_FILE = "charter.toml"


class LintSettings(InputModel):
    ignore: tuple[str, ...] = ()


class Expectation(InputModel):
    """One tool call and the decision it must get."""

    name: str | None = None
    agent: str | None = None  # may be omitted in an agent directory or a one-agent project
    stage: str | None = None  # default: the agent's entry stage
    tool: str
    args: dict[str, Any] = {}
    command: str | None = None  # shorthand for args.command (shell, terminal)
    cwd: str | None = None
    unattended: bool = False
    yolo: bool = False
    allow: tuple[str, ...] = ()
    decision: Permission
    why: str | None = None

    @model_validator(mode="after")
    def _command_or_args(self) -> Self:
        if self.command is not None and "command" in self.args:
            raise invalid_value("give the command either as 'command' or in 'args', not both")
        return self

    def call_args(self) -> dict[str, Any]:
        out: dict[str, Any] = thaw(self.args)
        if self.command is not None:
            out["command"] = self.command
        return out


class ProjectSettings(InputModel):
    lint: LintSettings = LintSettings()
    expect: tuple[Expectation, ...] = Field(default=())


def load_settings(path: Path, display: str) -> Loaded[ProjectSettings]:
    return load_document(path, display, ProjectSettings, "toml")
