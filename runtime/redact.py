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

Every step is linear in the text: output is attacker-shaped (a command prints
what it likes), so no pattern here may backtrack. The discovery patterns use
possessive quantifiers and anchor where a match can start; known values are
found one value at a time with the string search of the standard library
(linear whatever the value), never with one alternation of all of them,
whose cost grows with the text times the longest value. The work is about a
millisecond per known value per megabyte. One output may teach at most
:data:`MAX_LEARNED_PER_TEXT` new values; an output that shows more is
withheld whole (a ``redaction-failed`` result), never shown half-redacted.
"""

from __future__ import annotations

import functools
import heapq
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Literal
from urllib.parse import unquote, unquote_plus

from charter.runtime.errors import CharterError
from charter.runtime.results import ToolResult

__all__ = [
    "FAILED_MARKER",
    "MAX_LEARNED_PER_TEXT",
    "MIN_SECRET_LEN",
    "VIEWS",
    "Redactor",
    "TooManySecrets",
    "View",
    "find_secrets",
    "head_overlap",
    "name_words",
    "redacted_views",
    "sensitive_name",
    "tail_overlap",
    "token_shaped",
]

View = Literal["model", "operator", "event", "stored"]
VIEWS: tuple[View, ...] = ("model", "operator", "event", "stored")
FAILED_MARKER = "<redaction-failed>"
MIN_SECRET_LEN = 4
# The most new values one output may teach. Each known value costs about a
# millisecond per megabyte redacted, for the rest of the run; an output that
# shows more credentials than this is withheld rather than half-redacted.
MAX_LEARNED_PER_TEXT = 256
# Candidate comparisons a prefix/suffix overlap search makes before it
# answers the longest overlap still possible (hiding a little too much,
# never too little).
_OVERLAP_CHECKS = 32

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
        ("key", "material"),
    }
)
# Query parameters that carry credentials in common APIs even with plain names.
_SENSITIVE_QUERY = frozenset(
    {"code", "key", "session", "sid", "sig", "x-amz-signature", "x-amz-credential"}
)

_SPLIT = re.compile(r"[_\-.]+")
# What follows ``://`` up to a delimiter: the rest of a URL. The pattern
# starts with a literal, so the search skips to each ``://`` at string-search
# speed; the body is consumed whole, so no text is scanned twice. The scheme
# in front is not looked at: a ``://`` with a userinfo or a query after it is
# judged whatever precedes it (the old pattern scanned every run of scheme
# characters from each of its characters, quadratic on a long word).
_URL_BODY = re.compile(r"://([^\s'\"<>`]++)")
# Header values, one pattern per header name, each starting with the name
# as a literal (the search skips to each occurrence at string-search speed;
# one alternation of the names would test every position) and matched on
# the lower-cased text, whose positions are those of the text. The
# look-behind after the name says it does not continue a URL or a longer
# word (``https://x-access-token:``, ``proxy-authorization`` holding
# ``authorization``). Blanks, never newlines, between the parts: a header
# ends with its line.
_AUTH_HEADERS = ("authorization", "proxy-authorization")
_KEY_HEADERS = (
    "x-api-key",
    "x-goog-api-key",
    "api-key",
    "apikey",
    "x-api-token",
    "x-auth-token",
    "x-access-token",
    "cookie",
    "set-cookie",
)
_AUTH_TAIL = r"[ \t]*+:[ \t]*+(?:[A-Za-z][\w.+-]*+[ \t]++(?=[^\s'\"]))?([^\s'\"]++)"
_KEY_TAIL = r"[ \t]*+:[ \t]*+([^\s'\"]++)"
_HEADERS = tuple(
    (name, re.compile(re.escape(name) + r"(?<![\w/@.:-]" + re.escape(name) + ")" + tail))
    for names, tail in ((_AUTH_HEADERS, _AUTH_TAIL), (_KEY_HEADERS, _KEY_TAIL))
    for name in names
)
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
# An authorization scheme alone (``Authorization: Bearer`` at a line's end)
# is no credential.
_AUTH_SCHEMES = frozenset({"bearer", "basic", "digest", "token", "negotiate", "ntlm", "dpop"})
# "SCHEME CREDENTIAL" in a structured authorization field.
_SCHEME_VALUE = re.compile(r"\s*+[A-Za-z][\w.+-]*+[ \t]++(\S++)\s*+")
# --token=VALUE, --token VALUE, --api-key "VALUE", -password=VALUE. The
# pattern starts with the literal `-` (a fast search), and the look-behind
# after it says that dash does not continue a word.
_OPTION = re.compile(
    r"-(?<![\w-]-)-?([A-Za-z][A-Za-z0-9_-]*+)(?:=|\s++)"
    r"(\"[^\"]*+\"|'[^']*+'|[^\s'\"-]\S*+)"
)
# NAME=VALUE (shell assignments, .env lines, export NAME=VALUE)
_ASSIGN = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*+)\s*+=\s*+(\"[^\"]*+\"|'[^']*+'|[^\s'\";&|]++)")
# The value of a query pair that could be a secret (at least four
# characters; parse_qsl's reading: the first `=` ends the key). The key is
# what precedes it back to the last `&`. A literal first: the search skips
# to each `=` at string-search speed.
_QUERY_VALUE = re.compile(r"=([^&]{4,}+)")
# Names appear inside markers (<redacted:NAME@SOURCE>): no angle brackets.
_MARKER_UNSAFE = re.compile(r"[<>]")
_AUTH_WORDS = frozenset({"authorization", "auth", "bearer"})


class TooManySecrets(CharterError):
    """One text showed more than :data:`MAX_LEARNED_PER_TEXT` new credentials."""


def name_words(name: str) -> list[str]:
    """A variable/field/option name split into lower-case words at ``_``,
    ``-`` and ``.``."""
    return [w for w in _SPLIT.split(name.strip().lower()) if w]


@functools.lru_cache(maxsize=4096)
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


@functools.lru_cache(maxsize=4096)
def _sensitive_query_key(raw: str) -> str | None:
    """The decoded query key when it names a credential, else None. Cached:
    a long query repeats its keys."""
    key = unquote_plus(raw)
    if sensitive_name(key) or key.lower() in _SENSITIVE_QUERY:
        return key
    return None


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


def find_secrets(text: str, ordered: Iterable[str]) -> Iterator[tuple[int, int, str]]:
    """Every secret occurrence in ``text`` as ``(start, end, value)``, left
    to right, without overlaps: at each position the longest value that
    starts there wins (what one alternation of the values, longest first,
    would match). ``ordered`` is the values, longest first.

    Linear in the text for each value: every value is looked for with
    ``str.find`` (a two-way search, linear whatever the value's shape), and
    a value's next occurrence is looked for again only once an earlier match
    has covered the one found."""
    return _scan(text, [v for v in ordered if v in text])


def _scan(text: str, present: list[str]) -> Iterator[tuple[int, int, str]]:
    """:func:`find_secrets` over values known to occur in ``text``."""
    if not present:
        return
    if len(present) == 1:
        value = present[0]
        i = text.find(value)
        while i != -1:
            yield i, i + len(value), value
            i = text.find(value, i + len(value))
        return
    # (next start, -length, index): the top is the leftmost, longest first
    heap = [(text.find(v), -len(v), n) for n, v in enumerate(present)]
    heapq.heapify(heap)
    pos = 0
    while heap:
        start, neg, n = heap[0]
        value = present[n]
        if start < pos:  # covered by an earlier match: look again from pos
            nxt = text.find(value, pos)
            if nxt == -1:
                heapq.heappop(heap)
            else:
                heapq.heapreplace(heap, (nxt, neg, n))
            continue
        end = start - neg
        yield start, end, value
        pos = end
        nxt = text.find(value, pos)
        if nxt == -1:
            heapq.heappop(heap)
        else:
            heapq.heapreplace(heap, (nxt, neg, n))


def tail_overlap(text: str, value: str, least: int = 1) -> int:
    """How many characters at the end of ``text`` may be the start of
    ``value`` (a proper prefix of it, at least ``least`` long); 0 if none.

    Candidates are the places in the last ``len(value) - 1`` characters
    where ``value``'s first ``least`` characters occur, tried from the
    longest overlap down. The work is bounded: after a few failed
    comparisons the answer is the longest overlap not yet ruled out, which
    hides a little too much and never too little."""
    return _overlap(text, value, min(len(value) - 1, len(text)), least)


def head_overlap(text: str, value: str, least: int = 1) -> int:
    """How many characters at the start of ``text`` may be the end of
    ``value`` (a proper suffix of it, at least ``least`` long); 0 if none.
    The mirror of :func:`tail_overlap`, with the same bound."""
    return _overlap(value, text, min(len(value) - 1, len(text)), least)


def _overlap(first: str, second: str, most: int, least: int) -> int:
    """The longest run, ``least`` to ``most`` characters, that ends ``first``
    and starts ``second`` (both overlaps above are this, with the secret on
    one side or the other); past ``_OVERLAP_CHECKS`` failed comparisons, the
    longest candidate left."""
    if most < least or least < 1:
        return 0
    lead = second[:least]
    i = first.find(lead, len(first) - most)
    checks = 0
    while i != -1:
        n = len(first) - i
        if n < least:
            return 0
        if checks >= _OVERLAP_CHECKS or second.startswith(first[i:]):
            return n
        checks += 1
        i = first.find(lead, i + 1)
    return 0


class Redactor:
    """The known secret values of one run, and their removal from text."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[str, tuple[str, str]] = {}  # value -> (name, source)
        self._ordered: tuple[str, ...] | None = None  # longest first

    # -- collecting -----------------------------------------------------------

    def add(self, value: str, name: str, source: str = "value") -> bool:
        """Remember ``value`` as secret; False when it is too short to count."""
        return self._add(value, name, source) >= 0

    def _add(self, value: str, name: str, source: str) -> int:
        """1 when ``value`` is new, 0 when already known, -1 when too short."""
        if not isinstance(value, str) or len(value) < MIN_SECRET_LEN:
            return -1
        with self._lock:
            if value in self._values:
                return 0
            self._values[value] = (_MARKER_UNSAFE.sub("", name), _MARKER_UNSAFE.sub("", source))
            self._ordered = None
        return 1

    def add_env(self, env: Mapping[str, str]) -> int:
        """Collect the values of credential-looking variables; returns how many."""
        return sum(
            self.add(value, name, "env") for name, value in env.items() if sensitive_name(name)
        )

    def discover(self, text: str) -> int:
        """Collect secrets that ``text`` itself reveals (a command line, an
        argument, an error message); returns how many were found."""
        found = 0
        for value, name, source in self._shapes(text, lone_userinfo=None):
            found += self.add(value, name, source)
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
        query values (as printed and decoded), and ``Authorization``- and
        API-key-style headers (``curl -v``).

        Unlike :meth:`discover`, ``NAME=VALUE`` and ``--option VALUE`` are not
        taken from output: source code and logs are full of them
        (``token = tokens[0]``), and treating each as a secret would shred
        everything the model reads afterwards.

        Raises :class:`TooManySecrets` once the text has taught
        :data:`MAX_LEARNED_PER_TEXT` new values (those are kept): the caller
        withholds such an output."""
        found = new = 0
        for value, name, source in self._shapes(text, lone_userinfo=token_shaped):
            added = self._add(value, name, source)
            found += added >= 0
            new += added == 1
            if new >= MAX_LEARNED_PER_TEXT:
                raise TooManySecrets(f"the text shows more than {MAX_LEARNED_PER_TEXT} credentials")
        return found

    def _shapes(
        self, text: str, lone_userinfo: Callable[[str], bool] | None
    ) -> Iterator[tuple[str, str, str]]:
        """(value, name, source) for every URL credential and header value
        in ``text``, each distinct one once."""
        # only a userinfo or a query can hold a credential
        for body in dict.fromkeys(_URL_BODY.findall(text)):  # in order, once each
            if "@" in body or "?" in body:
                yield from _from_url(body, lone_userinfo)
        low = text.lower()
        if len(low) != len(text):  # a character that lower-cases to two
            low = text.translate(_ASCII_LOWER)
        same = low == text
        for name, pattern in _HEADERS:
            if same:
                values = dict.fromkeys(pattern.findall(text))
            else:  # the value as the text spells it, at the same place
                values = dict.fromkeys(
                    text[a:b] for a, b in (m.span(1) for m in pattern.finditer(low))
                )
            for value in values:
                if name in _AUTH_HEADERS and value.lower() in _AUTH_SCHEMES:
                    continue  # a scheme alone at a line's end
                if name == "x-access-token" and "@" in value:
                    # GitHub's userinfo idiom (https://x-access-token:TOKEN@host/)
                    # without its scheme: the token ends at the `@`
                    value = value.split("@", 1)[0]
                yield value, name, "header"

    def discover_value(self, value: Any, name: str = "") -> int:
        """Collect secrets from structured data: values under sensitive keys
        (every string of a list under one too), the credential of a
        ``SCHEME VALUE`` authorization field on its own (so that a Bearer
        token echoed without its prefix is hidden too), and whatever the text
        of any value or key reveals."""
        found = 0
        # (value, name, inside a sensitive key); a stack, not recursion, so
        # deep data cannot exhaust the interpreter's stack
        stack: list[tuple[Any, str, bool]] = [(value, name, bool(name) and sensitive_name(name))]
        while stack:
            item, label, secret = stack.pop()
            if isinstance(item, str):
                if secret:
                    found += self.add(item, label, "field")
                    if _AUTH_WORDS & set(name_words(label)):
                        m = _SCHEME_VALUE.fullmatch(item)
                        if m is not None:
                            found += self.add(m.group(1), label, "field")
                found += self.discover(item)
            elif isinstance(item, Mapping):
                # Each key names its own value: a mapping under a sensitive
                # name is not all secret (``secret_bindings`` holds the
                # names of secrets, not their values). A key's text can
                # still reveal one (a URL with its token used as a key).
                for k, v in item.items():
                    key = str(k)
                    found += self.discover(key)
                    stack.append((v, key, sensitive_name(key)))
            elif isinstance(item, list | tuple):
                stack.extend((v, label, secret) for v in item)
        return found

    # -- removing -------------------------------------------------------------

    @property
    def known(self) -> int:
        return len(self._values)

    def snapshot(self) -> tuple[tuple[str, ...], dict[str, tuple[str, str]]]:
        """The known values longest first and a copy of them with their
        (name, source), read together: for callers that redact a stream and
        must know which values a piece's end may be the start of."""
        with self._lock:
            if self._ordered is None:
                # Longest first: at one position the longest value wins, so
                # a secret containing another is removed whole.
                self._ordered = tuple(sorted(self._values, key=len, reverse=True))
            return self._ordered, dict(self._values)

    def marker(self, value: str, view: View, values: Mapping[str, tuple[str, str]]) -> str:
        """What ``value`` (a known secret) becomes in ``view``."""
        if view == "model":
            return "<redacted>"
        name, source = values[value]
        if view == "operator":
            return f"<redacted:{name}>"
        return f"<redacted:{name}@{source}>"

    def redact(self, text: str, view: View = "model") -> str:
        """``text`` with every known secret replaced for ``view``. Never raises:
        any failure yields :data:`FAILED_MARKER`."""
        try:
            if view not in VIEWS:
                raise ValueError(f"unknown redaction view {view!r}")
            if not isinstance(text, str):
                raise TypeError("only text can be redacted")
            ordered, values = self.snapshot()
            present = [v for v in ordered if v in text]
            if not present:
                return text
            if len(present) == 1:
                return text.replace(present[0], self.marker(present[0], view, values))
            parts: list[str] = []
            pos = 0
            for start, end, value in _scan(text, present):
                parts.append(text[pos:start])
                parts.append(self.marker(value, view, values))
                pos = end
            parts.append(text[pos:])
            return "".join(parts)
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
            ordered, _ = self.snapshot()
            longest = max(
                (tail_overlap(out, value, MIN_SECRET_LEN) for value in ordered), default=0
            )
            return out[: len(out) - longest] + ("<redacted>" if longest else "")
        except Exception:  # noqa: BLE001
            return FAILED_MARKER

    def redact_value(self, value: Any, view: View = "model") -> Any:
        """A copy of structured data (dicts, lists, strings) with secrets
        removed, from mapping keys as well as values."""
        if isinstance(value, str):
            return self.redact(value, view)
        if isinstance(value, Mapping):
            out: dict[str, Any] = {}
            for k, v in value.items():
                key = self.redact(str(k), view)
                if key in out:
                    # two keys that differed only in a secret: keep both
                    n = 2
                    while f"{key}#{n}" in out:
                        n += 1
                    key = f"{key}#{n}"
                out[key] = self.redact_value(v, view)
            return out
        if isinstance(value, list | tuple):
            return [self.redact_value(v, view) for v in value]
        return value

    def names(self) -> Iterable[str]:
        """The names of the known secrets (never their values)."""
        return sorted({name for name, _ in self._values.values()})


def _from_url(
    rest: str, lone_userinfo: Callable[[str], bool] | None
) -> Iterator[tuple[str, str, str]]:
    """(value, name, source) for the credentials in one URL, given as what
    follows its ``://``: its password (or a lone userinfo), and sensitive
    query values, each as written and percent-decoded. Parsed by hand,
    linearly, and without the standard library's cache of split URLs (which
    would keep megabytes alive)."""
    cut = len(rest)
    for c in "/?#":
        i = rest.find(c)
        if i != -1 and i < cut:
            cut = i
    netloc, tail = rest[:cut], rest[cut:]
    userinfo, at, hostport = netloc.rpartition("@")
    host = hostport
    if host.startswith("["):
        host = host[1 : host.find("]")] if "]" in host else host[1:]
    else:
        host = host.split(":", 1)[0]
    host = host.lower() or "url"
    if at:
        username, colon, password = userinfo.partition(":")
        if colon and password:
            yield password, f"{host} password", "url"
            decoded = unquote(password)
            if decoded != password:
                yield decoded, f"{host} password", "url"
        elif username and (lone_userinfo is None or lone_userinfo(username)):
            # A lone userinfo is usually a token (https://TOKEN@github.com/...).
            yield username, f"{host} userinfo", "url"
    before_fragment = tail.split("#", 1)[0]
    q = before_fragment.find("?")
    if q == -1:
        return
    query = before_fragment[q + 1 :]
    for m in _QUERY_VALUE.finditer(query):
        raw = m.group(1)
        key = _sensitive_query_key(query[query.rfind("&", 0, m.start()) + 1 : m.start()])
        if key is None:
            continue
        yield raw, key, "url"
        decoded = unquote_plus(raw)
        if decoded != raw:
            yield decoded, key, "url"


def redacted_views(result: ToolResult, redactor: Redactor, extra_display: str = "") -> ToolResult:
    """``result`` with each view passed through its own redaction: the
    content for the model, the display (plus ``extra_display``) for the
    operator, the data for storage. If any view cannot be redacted, the
    whole result becomes a ``redaction-failed`` error: one failed view means
    the values could not be checked anywhere, so none is shown."""
    try:
        # Output can reveal credentials nobody declared (a remote URL with its
        # token, a verbose HTTP trace); they are learnt before anything is
        # shown, so this result and every later one hide them. An output that
        # shows too many to learn (TooManySecrets) is withheld like a failure.
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
