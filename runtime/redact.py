"""Removing known secret values from everything a tool call produces.

The :class:`Redactor` of a run collects values it knows to be secret: the
values of secret bindings, credential-looking environment variables, and
whatever a call's own text reveals (URL passwords, sensitive query values,
``Authorization:`` headers, ``--token=...`` options, ``API_KEY=...``
assignments). Every text shown to anyone passes through :meth:`Redactor.redact`
with the *view* it is meant for:

=========  ================================  ==================================
view       who reads it                      a secret becomes
=========  ================================  ==================================
model      the model (history, replay)       ``<redacted>``
operator   a person watching tool cards      ``<redacted:NAME>``
event      the audit/event log               ``<redacted:NAME@SOURCE>``
stored     durable records                   ``<redacted:NAME@SOURCE>``
=========  ================================  ==================================

The model never learns which variable a value came from (it could ask for it
by name next); people and logs get the name and where it was found, never
the value.

Replacement is by exact value, longest first, so a secret that contains
another is removed whole. Values shorter than four characters are not
collected: such values (``1``, ``yes``, ``dev``) occur everywhere, replacing
them would shred ordinary output, and the pattern of what was replaced would
itself spell out the value. A secret that short offers no protection anyway.

This is exact-value redaction: a secret the command transforms (base64,
reversed, split across lines) is not recognised. If redaction itself fails,
the caller gets :data:`FAILED_MARKER` instead of the text, never the raw text.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal
from urllib.parse import parse_qsl, urlsplit

from charter.runtime.results import ToolResult

__all__ = [
    "FAILED_MARKER",
    "MIN_SECRET_LEN",
    "VIEWS",
    "Redactor",
    "View",
    "redacted_views",
    "name_words",
    "sensitive_name",
    "token_shaped",
]

View = Literal["model", "operator", "event", "stored"]
VIEWS: tuple[View, ...] = ("model", "operator", "event", "stored")
FAILED_MARKER = "<redaction-failed>"
MIN_SECRET_LEN = 4

# Parts of a variable, field, option or query-parameter name that mark its
# value as a credential. Matched on the name split at '_', '-' and '.'.
_SENSITIVE_WORDS = frozenset(
    {
        "token",
        "secret",
        "password",
        "passwd",
        "passphrase",
        "apikey",
        "auth",
        "authorization",
        "bearer",
        "credential",
        "credentials",
        "cookie",
        "signature",
        "sig",
        "jwt",
        "pat",
    }
)
# Two-word names whose words alone are too common (``key``, ``access``).
_SENSITIVE_PAIRS = frozenset(
    {
        ("api", "key"),
        ("private", "key"),
        ("access", "key"),
        ("secret", "key"),
        ("client", "secret"),
        ("x", "api"),
        ("account", "key"),
        ("signing", "key"),
        ("encryption", "key"),
    }
)
# Query parameters that carry credentials in common APIs even with plain names.
_SENSITIVE_QUERY = frozenset(
    {"code", "key", "session", "sid", "sig", "x-amz-signature", "x-amz-credential"}
)

_SPLIT = re.compile(r"[_\-.]+")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")
_HEADER = re.compile(
    r"(?im)\b(authorization|proxy-authorization|x-api-key|api-key|x-auth-token|cookie|set-cookie)"
    r"\s*:\s*(?:(?:bearer|basic|token|digest)\s+)?([^\s'\"]+)"
)
# --token=VALUE, --token VALUE, --api-key "VALUE", -password=VALUE
_OPTION = re.compile(
    r"(?<![\w-])--?([A-Za-z][A-Za-z0-9_-]*)(?:=|\s+)(\"[^\"]*\"|'[^']*'|[^\s'\"-][^\s]*)"
)
# NAME=VALUE (shell assignments, .env lines, export NAME=VALUE)
_ASSIGN = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(\"[^\"]*\"|'[^']*'|[^\s'\";&|]+)")


def name_words(name: str) -> list[str]:
    """A variable/field/option name split into lower-case words at ``_``,
    ``-`` and ``.``."""
    return [w for w in _SPLIT.split(name.strip().lower()) if w]


def sensitive_name(name: str) -> bool:
    """Whether a variable/field/option name marks its value as a credential."""
    words = name_words(name)
    if not words:
        return False
    if any(w in _SENSITIVE_WORDS for w in words):
        return True
    if any(w.endswith(("token", "secret", "password", "apikey")) for w in words):
        return True  # GITHUBTOKEN, DBPASSWORD
    return any(pair in _SENSITIVE_PAIRS for pair in zip(words, words[1:], strict=False))


def token_shaped(value: str) -> bool:
    """A lone URL userinfo that looks like a token rather than a user name
    (``ghp_...``, ``glpat-...``, a long random string): output is full of
    ``https://alice@host`` remotes, and redacting ``alice`` everywhere would
    shred it."""
    return len(value) >= 16 and any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


class Redactor:
    """The known secret values of one run, and their removal from text."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[str, tuple[str, str]] = {}  # value -> (name, source)
        self._pattern: re.Pattern[str] | None = None

    # -- collecting -----------------------------------------------------------

    def add(self, value: str, name: str, source: str = "value") -> bool:
        """Remember ``value`` as secret; False when it is too short to count."""
        if not isinstance(value, str) or len(value) < MIN_SECRET_LEN:
            return False
        with self._lock:
            if value not in self._values:
                self._values[value] = (name, source)
                self._pattern = None
        return True

    def add_env(self, env: Mapping[str, str]) -> int:
        """Collect the values of credential-looking variables; returns how many."""
        return sum(
            self.add(value, name, "env") for name, value in env.items() if sensitive_name(name)
        )

    def discover(self, text: str) -> int:
        """Collect secrets that ``text`` itself reveals (a command line, an
        argument, an error message); returns how many were found."""
        found = 0
        for m in _URL.finditer(text):
            found += self._from_url(m.group(0))
        for m in _HEADER.finditer(text):
            found += self.add(m.group(2), m.group(1).lower(), "header")
        for m in _OPTION.finditer(text):
            if sensitive_name(m.group(1)):
                found += self.add(_unquote(m.group(2)), m.group(1), "option")
        for m in _ASSIGN.finditer(text):
            if sensitive_name(m.group(1)):
                found += self.add(_unquote(m.group(2)), m.group(1), "assignment")
        return found

    def discover_in_output(self, text: str) -> int:
        """Collect credentials that a tool's output shows in unmistakable
        shapes: a URL's password (``git remote -v`` prints
        ``https://user:TOKEN@host``), a token-shaped lone userinfo, credential
        query values, and ``Authorization``-style headers (``curl -v``).

        Unlike :meth:`discover`, ``NAME=VALUE`` and ``--option VALUE`` are not
        taken from output: source code and logs are full of them
        (``token = tokens[0]``), and treating each as a secret would shred
        everything the model reads afterwards."""
        found = 0
        for m in _URL.finditer(text):
            found += self._from_url(m.group(0), lone_userinfo=token_shaped)
        for m in _HEADER.finditer(text):
            found += self.add(m.group(2), m.group(1).lower(), "header")
        return found

    def discover_value(self, value: Any, name: str = "") -> int:
        """Collect secrets from structured data: values under sensitive keys,
        and whatever their text reveals."""
        found = 0
        if isinstance(value, str):
            if name and sensitive_name(name):
                found += self.add(value, name, "field")
            found += self.discover(value)
        elif isinstance(value, Mapping):
            for k, v in value.items():
                found += self.discover_value(v, str(k))
        elif isinstance(value, list | tuple):
            for v in value:
                found += self.discover_value(v, name)
        return found

    def _from_url(self, url: str, lone_userinfo: Callable[[str], bool] | None = None) -> int:
        try:
            parts = urlsplit(url)
            password = parts.password
            username = parts.username
            query = parse_qsl(parts.query, keep_blank_values=False)
        except ValueError:
            return 0
        found = 0
        if password:
            found += self.add(password, f"{parts.hostname or 'url'} password", "url")
        elif username and "@" in parts.netloc:
            # A lone userinfo is usually a token (https://TOKEN@github.com/...).
            if lone_userinfo is None or lone_userinfo(username):
                found += self.add(username, f"{parts.hostname or 'url'} userinfo", "url")
        for key, value in query:
            if sensitive_name(key) or key.lower() in _SENSITIVE_QUERY:
                found += self.add(value, key, "url")
        return found

    # -- removing -------------------------------------------------------------

    @property
    def known(self) -> int:
        return len(self._values)

    def snapshot(self) -> tuple[re.Pattern[str] | None, dict[str, tuple[str, str]]]:
        """The compiled pattern of every known value (None when there is
        none) and a copy of the values with their (name, source), read
        together: for callers that redact a stream and must know the
        longest value to hold back a secret's possible start."""
        return self._compiled()

    def _compiled(self) -> tuple[re.Pattern[str] | None, dict[str, tuple[str, str]]]:
        with self._lock:
            if self._pattern is None and self._values:
                # Longest first: alternation takes the first branch that
                # matches, so a secret containing another is removed whole.
                ordered = sorted(self._values, key=len, reverse=True)
                self._pattern = re.compile("|".join(map(re.escape, ordered)))
            return self._pattern, dict(self._values)

    def redact(self, text: str, view: View = "model") -> str:
        """``text`` with every known secret replaced for ``view``. Never raises:
        any failure yields :data:`FAILED_MARKER`."""
        try:
            if view not in VIEWS:
                raise ValueError(f"unknown redaction view {view!r}")
            if not isinstance(text, str):
                raise TypeError("only text can be redacted")
            pattern, values = self._compiled()
            if pattern is None:
                return text

            def replace(m: re.Match[str]) -> str:
                name, source = values[m.group(0)]
                if view == "model":
                    return "<redacted>"
                if view == "operator":
                    return f"<redacted:{name}>"
                return f"<redacted:{name}@{source}>"

            return pattern.sub(replace, text)
        except Exception:  # noqa: BLE001 - any failure must hide the text, not show it
            return FAILED_MARKER

    def redact_cut(self, text: str, view: View = "model") -> str:
        """Like :meth:`redact`, for text that was cut off at a size cap: a
        secret split by the cut leaves a prefix at the very end, which is
        masked too."""
        out = self.redact(text, view)
        if out == FAILED_MARKER:
            return out
        try:
            _, values = self._compiled()
            longest = 0
            for value in values:
                for n in range(min(len(value) - 1, len(out)), MIN_SECRET_LEN - 1, -1):
                    if out.endswith(value[:n]):
                        longest = max(longest, n)
                        break
            return out[: len(out) - longest] + ("<redacted>" if longest else "")
        except Exception:  # noqa: BLE001
            return FAILED_MARKER

    def redact_value(self, value: Any, view: View = "model") -> Any:
        """A copy of structured data (dicts, lists, strings) with secrets removed."""
        if isinstance(value, str):
            return self.redact(value, view)
        if isinstance(value, Mapping):
            return {str(k): self.redact_value(v, view) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.redact_value(v, view) for v in value]
        return value

    def names(self) -> Iterable[str]:
        """The names of the known secrets (never their values)."""
        return sorted({name for name, _ in self._values.values()})


def redacted_views(result: ToolResult, redactor: Redactor, extra_display: str = "") -> ToolResult:
    """``result`` with each view passed through its own redaction: the
    content for the model, the display (plus ``extra_display``) for the
    operator, the data for storage. If any view cannot be redacted, the
    whole result becomes a ``redaction-failed`` error: one failed view means
    the values could not be checked anywhere, so none is shown."""
    try:
        # Output can reveal credentials nobody declared (a remote URL with its
        # token, a verbose HTTP trace); they are learnt before anything is
        # shown, so this result and every later one hide them.
        redactor.discover_in_output(result.content)
        if result.display is not None:
            redactor.discover_in_output(result.display)
        content = redactor.redact(result.content, "model")
        display_src = result.display if result.display is not None else result.content
        display = redactor.redact(display_src + extra_display, "operator")
        data = redactor.redact_value(result.data, "stored")
    except Exception:  # noqa: BLE001 - a failing redactor must hide, never show
        content = display = FAILED_MARKER
        data = {}
    if FAILED_MARKER in (content, display):
        return ToolResult(
            "error", FAILED_MARKER, gate=result.gate, rule="redaction-failed", display=FAILED_MARKER
        )
    return ToolResult(
        result.status,
        content,
        gate=result.gate,
        rule=result.rule,
        display=None if display == content else display,
        data=data if isinstance(data, dict) else {},
    )
