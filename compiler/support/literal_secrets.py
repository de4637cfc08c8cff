"""Credentials written into configuration files instead of referenced.

An MCP manifest is committed with the agent, so a token typed into its
``env``, ``headers``, ``url`` or ``args`` is a token in the repository's
history. The host expands ``${NAME}`` references only after connecting is
approved; that is the way to hand a server a secret. This module finds
values that look like credentials and are not (only) references.

What counts as a credential, by where it is written:

* the value of an ``env`` entry or header whose name marks a credential
  (``*_TOKEN``, ``*_PASSWORD``, ``Authorization``, ``X-Api-Key``, ...), once
  its ``${NAME}`` references and an auth scheme word (``Bearer``) are taken
  out;
* a URL's password, or a lone user name that looks like a token; a query
  value under a credential name;
* the value of a credential-named option in ``args`` (``--token=...``,
  ``--api-key VALUE``);
* anywhere, a value with the shape of a well-known token format (GitHub,
  GitLab, Slack, OpenAI and Anthropic keys, AWS access key ids, Google API
  keys).

Findings never include the value itself: diagnostics end up in CI logs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from urllib.parse import parse_qsl, urlsplit

from charter.runtime.redact import MIN_SECRET_LEN, name_words, sensitive_name, token_shaped

__all__ = ["Finding", "known_token_kind", "literal_secrets"]

# (key path inside the manifest, what was found there)
Finding = tuple[tuple[str | int, ...], str]

_REF = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")
_SCHEME = re.compile(r"^\s*(?:bearer|basic|token|digest)\b", re.IGNORECASE)
_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "x-api-key", "api-key"})
_TOKENS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "a GitHub token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})"),
    ),
    ("a GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("an Anthropic key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}")),
    ("an OpenAI key", re.compile(r"\bsk-(?:proj-)?[A-Za-z0-9_-]{20,}")),
    ("an AWS access key id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
)
_OPTION = re.compile(r"^--?([A-Za-z][A-Za-z0-9_-]*)(?:=(.*))?$", re.DOTALL)


def known_token_kind(text: str) -> str | None:
    """What well-known token format ``text`` contains, if any."""
    for kind, pattern in _TOKENS:
        if pattern.search(_REF.sub("", text)):
            return kind
    return None


def _literal_part(value: str) -> str:
    """What is left of ``value`` once references and an auth scheme are out."""
    return _SCHEME.sub("", _REF.sub("", value)).strip()


# A credential-sounding name whose last word says the value is about the
# credential, not the credential: PASSWORD_FILE=/run/secrets/db, AUTH_TYPE.
_ABOUT = frozenset(
    {
        "file", "path", "dir", "directory", "name", "user", "username", "id", "type",
        "mode", "url", "uri", "endpoint", "host", "scope", "scopes", "header", "prefix",
        "ttl", "expiry", "expires", "method", "provider", "kind", "env", "var",
    }
)  # fmt: skip


def _credential_name(name: str, header: bool = False) -> bool:
    words = name_words(name)
    if words and words[-1] in _ABOUT:
        return False
    return sensitive_name(name) or (header and name.lower() in _HEADERS)


def _literal_credential(value: str) -> bool:
    literal = _literal_part(value)
    if literal.startswith(("/", "./", "../", "~/")):
        return False  # a path to where the secret is kept
    return len(literal) >= MIN_SECRET_LEN


def _named_value(name: str, value: str, header: bool = False) -> bool:
    return _credential_name(name, header) and _literal_credential(value)


def _url(url: str) -> Iterator[str]:
    try:
        parts = urlsplit(_REF.sub("REF", url))
        password, username = parts.password, parts.username
        query = parse_qsl(parts.query, keep_blank_values=False)
    except ValueError:
        return
    if password and password != "REF":
        yield "a password in the URL"
    elif username and "@" in parts.netloc and username != "REF" and token_shaped(username):
        yield "a token as the URL's user name"
    for key, value in query:
        if _credential_name(key) and value != "REF" and len(value) >= MIN_SECRET_LEN:
            yield f"a literal value for the query parameter '{key}'"


def _args(args: Sequence[str]) -> Iterator[Finding]:
    for i, arg in enumerate(args):
        m = _OPTION.match(arg)
        if m is None or not _credential_name(m.group(1)):
            continue
        if m.group(2) is not None:
            if _literal_credential(m.group(2)):
                yield ("args", i), f"a literal value for the option '--{m.group(1)}'"
        elif i + 1 < len(args) and not args[i + 1].startswith("-"):
            if _literal_credential(args[i + 1]):
                yield ("args", i + 1), f"a literal value for the option '--{m.group(1)}'"


def literal_secrets(
    *,
    env: Mapping[str, str],
    headers: Mapping[str, str],
    url: str | None,
    args: Sequence[str],
) -> list[Finding]:
    """Every place a manifest writes a credential literally, one finding per
    value, in the order env, url, headers, args (each as written)."""
    found: dict[tuple[str | int, ...], str] = {}
    for name, value in env.items():
        if _named_value(name, value):
            found[("env", name)] = f"the env entry '{name}' holds a literal value"
        elif (kind := known_token_kind(value)) is not None:
            found[("env", name)] = f"the env entry '{name}' holds {kind}"
    if url is not None:
        what = next(_url(url), None)
        if what is None and (kind := known_token_kind(url)) is not None:
            what = f"{kind} in the URL"
        if what is not None:
            found[("url",)] = what
    for name, value in headers.items():
        if _named_value(name, value, header=True):
            found[("headers", name)] = f"the header '{name}' holds a literal value"
        elif (kind := known_token_kind(value)) is not None:
            found[("headers", name)] = f"the header '{name}' holds {kind}"
    by_option = dict(_args(args))
    for i, arg in enumerate(args):
        if ("args", i) in by_option:
            found[("args", i)] = by_option[("args", i)]
        elif (kind := known_token_kind(arg)) is not None:
            found[("args", i)] = f"argument {i} holds {kind}"
    return list(found.items())
