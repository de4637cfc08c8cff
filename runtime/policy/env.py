"""The environment a shell command sees: an allowlist, never a copy.

A command inherits nothing from the runtime's own environment except the few
variables it needs to run and to print sensibly (search path, locale,
terminal, temporary directory, time zone). Provider keys, cloud credentials
and tokens that the runtime itself holds therefore never reach a command that
did not ask for them by name. HOME points at a directory the runtime owns, so
tools that read dot-files from HOME find the runtime's, not the user's.

A command that needs a secret names it with a :class:`SecretBinding`; each
binding needs the exact ``secret.bind:NAME`` grant and may not set a variable
that changes what gets executed (PATH, loader and interpreter hooks). The
bound value goes into the environment of that one command only
(:func:`call_env`): never into ``os.environ`` or the run's shared environment,
and the per-call copy is emptied when the command is done.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from charter.runtime.policy.capabilities import SECRET_PREFIX

__all__ = [
    "ALLOWED_VARS",
    "FORBIDDEN_TARGETS",
    "GIT_SAFETY",
    "MAX_BINDINGS",
    "SecretBinding",
    "build_env",
    "call_env",
    "effective_timeout",
    "forbidden_target",
    "validate_bindings",
    "validate_overlay",
]

# Kept from the parent environment when present.
ALLOWED_VARS: tuple[str, ...] = (
    "PATH",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "TMPDIR",
    "TMP",
    "TEMP",
    "TZ",
)
# Windows needs these for almost any program to start.
_WINDOWS_VARS: tuple[str, ...] = (
    "SYSTEMROOT",
    "SYSTEMDRIVE",
    "WINDIR",
    "COMSPEC",
    "PATHEXT",
    "PROGRAMFILES",
    "PROGRAMDATA",
    "NUMBER_OF_PROCESSORS",
    "PROCESSOR_ARCHITECTURE",
)

MAX_BINDINGS = 16

# git takes a directory holding HEAD, objects/, refs/ and config for a bare
# repository of its own and runs the programs that config names
# (diff.external, core.fsmonitor, textconv): a workspace laid out that way
# turns `git diff --no-index a b` into code execution. With
# safe.bareRepository=explicit git only uses a bare repository named by
# --git-dir or GIT_DIR, never one it stumbles on; a .git directory is
# unaffected. Set through git's environment config (which overlays cannot
# change: GIT_CONFIG_* is a forbidden family below).
GIT_SAFETY: dict[str, str] = {
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "safe.bareRepository",
    "GIT_CONFIG_VALUE_0": "explicit",
}

# Variables that decide *what* runs or how an interpreter starts. A secret
# bound to one of these would let its value (or an approval for it) steer
# execution, so neither a binding nor an overlay may set them.
FORBIDDEN_TARGETS: frozenset[str] = frozenset(
    {
        "PATH",
        "PATHEXT",
        "HOME",
        "USERPROFILE",
        "APPDATA",
        "LOCALAPPDATA",
        "SHELL",
        "BASH_ENV",
        "ENV",
        "ZDOTDIR",
        "PROMPT_COMMAND",
        "IFS",
        "CDPATH",
        "GLOBIGNORE",
        "SHELLOPTS",
        "BASHOPTS",
        "PS4",
        "COMSPEC",
        "SYSTEMROOT",
        "WINDIR",
        "PYTHONHOME",
        "PYTHONPATH",
        "PYTHONSTARTUP",
        "PYTHONUSERBASE",
        "PYTHONINSPECT",
        "NODE_OPTIONS",
        "NODE_PATH",
        "RUBYOPT",
        "RUBYLIB",
        "PERL5OPT",
        "PERL5LIB",
        "PERLLIB",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
        "JDK_JAVA_OPTIONS",
        "CLASSPATH",
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_EXEC_PATH",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_SYSTEM",
        "GIT_ASKPASS",
        "SSH_ASKPASS",
        "EDITOR",
        "VISUAL",
        "PAGER",
        "GIT_PAGER",
    }
)
# Whole families: dynamic loader injection (LD_PRELOAD, DYLD_INSERT_LIBRARIES,
# ...), git's per-command config injection (GIT_CONFIG_KEY_0, ...).
_FORBIDDEN_PREFIXES = ("LD_", "DYLD_", "GIT_CONFIG_")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# A NamedTuple, not a frozen dataclass: it is defined at every start-up, and a
# NamedTuple costs about a tenth as much to define.
class SecretBinding(NamedTuple):
    """Expose the runtime's ``source`` variable to one command as ``target``."""

    source: str  # "env:NAME"
    target: str | None = None  # defaults to NAME
    expires_in_seconds: int | None = None

    @property
    def source_name(self) -> str | None:
        kind, sep, name = self.source.partition(":")
        if kind != "env" or not sep or not _NAME.match(name):
            return None
        return name

    @property
    def target_name(self) -> str | None:
        return self.target if self.target is not None else self.source_name

    @property
    def capability(self) -> str | None:
        name = self.source_name
        return None if name is None else SECRET_PREFIX + name


def forbidden_target(name: str) -> bool:
    """Whether ``name`` steers execution and so may not be set by a binding or overlay."""
    upper = name.upper()  # Windows variables are case-insensitive
    return upper in FORBIDDEN_TARGETS or upper.startswith(_FORBIDDEN_PREFIXES)


def validate_overlay(overlay: Mapping[str, str]) -> list[str]:
    """Errors for an explicit env overlay (names only: values are the caller's)."""
    errors: list[str] = []
    for name, value in overlay.items():
        if not isinstance(name, str) or not _NAME.match(name):
            errors.append(f"env: {name!r} is not a valid variable name")
        elif forbidden_target(name):
            errors.append(f"env: {name} controls what gets executed and cannot be overridden")
        elif not isinstance(value, str) or "\x00" in value:
            errors.append(f"env: the value of {name} must be text without NUL bytes")
    return errors


def validate_bindings(bindings: Sequence[SecretBinding], grants: Iterable[str]) -> list[str]:
    """Every reason these bindings cannot be honoured; empty when they can.

    The grant must be exact (``secret.bind:NAME``): a wildcard grant is never
    enough, because it would hand any credential to any command."""
    granted = frozenset(grants)
    errors: list[str] = []
    if len(bindings) > MAX_BINDINGS:
        errors.append(f"secret_bindings: at most {MAX_BINDINGS} bindings, got {len(bindings)}")
    seen: set[str] = set()
    for n, b in enumerate(bindings):
        where = f"secret_bindings[{n}]"
        name = b.source_name
        if name is None:
            errors.append(f"{where}.source: {b.source!r} must have the form env:NAME")
            continue
        cap = SECRET_PREFIX + name
        if cap not in granted:
            errors.append(f"{where}: binding {name} needs the exact capability {cap}")
        target = b.target_name
        if target is None or not _NAME.match(target):
            errors.append(f"{where}.target: {target!r} is not a valid variable name")
        elif forbidden_target(target):
            errors.append(
                f"{where}.target: {target} controls what gets executed and cannot hold a secret"
            )
        elif target.upper() in seen:
            errors.append(f"{where}.target: {target} is bound twice")
        else:
            seen.add(target.upper())
        if b.expires_in_seconds is not None and b.expires_in_seconds < 1:
            errors.append(f"{where}.expires_in_seconds: must be at least 1")
    return errors


def effective_timeout(timeout_s: int, bindings: Sequence[SecretBinding]) -> int:
    """The command's timeout, cut to the earliest binding expiry: a secret is
    never left in a running process after its binding has expired."""
    expiries = [b.expires_in_seconds for b in bindings if b.expires_in_seconds is not None]
    return min([timeout_s, *expiries]) if expiries else timeout_s


def build_env(
    base: Mapping[str, str],
    *,
    home: Path,
    overlay: Mapping[str, str] | None = None,
    bindings: Sequence[SecretBinding] = (),
    tz: str | None = None,
) -> dict[str, str]:
    """The environment for one command.

    ``base`` is where allowlisted variables and binding sources are read from
    (normally ``os.environ``). Raises ValueError if the overlay or a binding is
    invalid or a bound source is not set: callers validate first and report,
    so reaching this with bad input is a bug, and it fails closed.
    """
    overlay = overlay or {}
    errors = validate_overlay(overlay)
    if errors:
        raise ValueError("; ".join(errors))
    keep = ALLOWED_VARS + (_WINDOWS_VARS if sys.platform == "win32" else ())
    env = {k: base[k] for k in keep if k in base}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    if tz is not None:
        env["TZ"] = tz
    env["HOME"] = str(home)
    if sys.platform == "win32":
        env["USERPROFILE"] = str(home)
    env.update(GIT_SAFETY)
    env.update(overlay)
    _bind(env, bindings, base, " in the environment")
    return env


def _bind(
    env: dict[str, str], bindings: Sequence[SecretBinding], source: Mapping[str, str], where: str
) -> None:
    """Set each binding's target in ``env`` to its source's value in ``source``."""
    for b in bindings:
        name, target = b.source_name, b.target_name
        if name is None or target is None or forbidden_target(target):
            raise ValueError(f"invalid secret binding {b.source!r}")
        if name not in source:
            raise ValueError(f"secret binding source {name} is not set{where}")
        env[target] = source[name]


@contextmanager
def call_env(
    base: Mapping[str, str],
    *,
    overlay: Mapping[str, str] | None = None,
    bindings: Sequence[SecretBinding] = (),
    secrets: Mapping[str, str],
) -> Iterator[dict[str, str]]:
    """A fresh environment for one command: ``base`` (the run's allowlisted
    environment), then the overlay, then each binding's value from
    ``secrets``.

    The bound values exist only in the dict this yields. Neither ``base``,
    ``secrets`` nor ``os.environ`` is written to, and the dict is emptied when
    the block ends, whatever happens inside it, so no host-side copy of a
    value outlives the call. Whoever needs the environment longer (a
    background task) takes its own copy inside the block; bindings are
    refused for those. Invalid input raises ValueError: callers validate and
    report first, so reaching this with it is a bug, and it fails closed.
    """
    overlay = overlay or {}
    errors = validate_overlay(overlay)
    if errors:
        raise ValueError("; ".join(errors))
    env = dict(base)
    env.update(overlay)
    try:
        _bind(env, bindings, secrets, "")
        yield env
    finally:
        env.clear()
