"""web_fetch, web_extract and web_search.

Every request goes through the URL policy's pinned transport: the target is
judged before anything is sent, each DNS answer must be safe, the
connection goes only to the address that was judged, and every redirect hop
is judged again. A refused, failed or oversized request comes back as a
result the model can read, never an exception.

web_search asks Brave Search when the user let the runtime read
``BRAVE_API_KEY`` (``[security] allow_env_vars``, seed 004) and otherwise a
keyless Wikipedia search, and says which one answered.
"""

from __future__ import annotations

import html
import json
import re
import time
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import TYPE_CHECKING, Any

from charter.runtime.errors import CharterError
from charter.runtime.results import ToolResult, refusal

if TYPE_CHECKING:
    import httpx

    from charter.runtime.net.resolve import Resolver
    from charter.runtime.tools.base import ToolRuntime

__all__ = [
    "BadEncoding",
    "WebConfig",
    "html_to_text",
    "iter_body",
    "run_fetch",
    "run_search",
    "web_config_for",
]

FETCH_CHARS = 50_000  # web_fetch's text budget; web_extract takes max_chars
BRAVE_URL = "https://api.search.brave.com/res/v1/web/search"
WIKIPEDIA_URL = "https://en.wikipedia.org/w/api.php"


@dataclass(frozen=True)
class WebConfig:
    """What the web tools of one run may use. ``resolver`` and ``verify``
    exist for tests and for users with their own trust store."""

    allow_local_network: bool = False
    resolver: Resolver | None = None
    verify: Any = True
    max_bytes: int = 2_000_000  # bytes read from any one response
    timeout_s: float = 20.0
    brave_api_key: str | None = None  # set only when the user allowed BRAVE_API_KEY
    brave_url: str = BRAVE_URL
    wikipedia_url: str = WIKIPEDIA_URL
    user_agent: str = "charter-web/1 (+https://charter.dev)"


def web_config_for(
    allow_local_network: bool,
    allow_env_vars: tuple[str, ...],
    environ: Mapping[str, str],
    **overrides: Any,
) -> WebConfig:
    """The web settings a plan's agent gets. ``BRAVE_API_KEY`` looks like a
    credential, so it is read only when the user listed it (case-insensitively)
    in ``[security] allow_env_vars``; otherwise search falls back to Wikipedia
    and the result says which provider answered."""
    allowed = {name.upper() for name in allow_env_vars}
    key = environ.get("BRAVE_API_KEY") if "BRAVE_API_KEY" in allowed else None
    return WebConfig(
        allow_local_network=allow_local_network, brave_api_key=key or None, **overrides
    )


def _config(rt: ToolRuntime) -> WebConfig:
    return rt.web if rt.web is not None else WebConfig()


def _client(cfg: WebConfig, timeout: float) -> httpx.Client:
    from charter.runtime.net.transport import pinned_client
    from charter.runtime.net.urlpolicy import UrlPolicy

    return pinned_client(
        UrlPolicy(allow_local_network=cfg.allow_local_network),
        resolver=cfg.resolver,
        timeout=timeout,
        verify=cfg.verify,
        headers={"User-Agent": cfg.user_agent, "Accept-Encoding": _ACCEPT_ENCODING},
        # The body loop stops at ``timeout`` and keeps what arrived; this is the
        # hard limit for a server that trickles its headers (or anything else).
        lifetime=2 * timeout,
    )


class _Fetched:
    def __init__(
        self, status: int, ctype: str, body: bytes, total: int, cut: bool, late: bool = False
    ) -> None:
        self.status, self.ctype, self.body, self.total, self.cut = status, ctype, body, total, cut
        self.late = late  # reading stopped at the deadline, not at the end of the body


# Content codings the tools ask for and decode themselves. httpx's own decoders
# inflate a whole network chunk at once, so a few kilobytes of gzip (or gzip
# inside gzip) become gigabytes in memory before any byte budget is consulted.
_ACCEPT_ENCODING = "gzip, deflate"
_INFLATE_STEP = 65_536  # most bytes one decompression step may produce


class BadEncoding(CharterError):  # noqa: N818 - named for what the caller reports
    """The response's Content-Encoding is unknown or its body does not decode."""


def _inflate(source: Iterable[bytes], coding: str) -> Iterator[bytes]:
    """Decode one content coding, never producing more than a step at a time."""
    if coding in ("gzip", "x-gzip"):
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    else:  # deflate: zlib-wrapped as the RFC says, or raw as some servers send it
        inflater = zlib.decompressobj(zlib.MAX_WBITS)
    first = True
    for chunk in source:
        data = chunk
        while True:
            try:
                out = inflater.decompress(data, _INFLATE_STEP)
            except zlib.error as exc:
                if first and coding == "deflate":
                    inflater, first = zlib.decompressobj(-zlib.MAX_WBITS), False
                    continue
                raise BadEncoding(f"the {coding} body does not decode: {exc}") from None
            first = False
            data = inflater.unconsumed_tail
            if out:
                yield out
            elif not data or inflater.eof:  # no output and nothing left to feed
                break
        if inflater.eof:
            return


def _decoded(raw: Iterable[bytes], header: str) -> Iterator[bytes]:
    """The body with every Content-Encoding undone, lazily and in bounded steps.

    An unknown coding is an error rather than bytes passed through as text."""
    codings = [c.strip().lower() for c in header.split(",") if c.strip()]
    stream: Iterable[bytes] = raw
    for coding in reversed(codings):
        if coding == "identity":
            continue
        if coding not in ("gzip", "x-gzip", "deflate"):
            raise BadEncoding(f"the response uses the content coding {coding!r}")
        stream = _inflate(stream, coding)
    return iter(stream)


def iter_body(resp: httpx.Response) -> Iterator[bytes]:
    """A streamed response's body, decoded in bounded steps (use it instead of
    ``resp.iter_bytes()``, which inflates each network chunk whole). Raises
    :class:`BadEncoding` for a coding the clients did not ask for."""
    return _decoded(resp.iter_raw(), resp.headers.get("content-encoding", ""))


def _get(
    cfg: WebConfig,
    url: str,
    *,
    timeout: float,
    params: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
) -> tuple[_Fetched, dict[str, Any]] | ToolResult:
    """GET ``url``; at most ``cfg.max_bytes`` of the body are kept."""
    import httpx

    from charter.runtime.net.transport import BlockedRequest, connected_address
    from charter.runtime.net.urlpolicy import audit_origin

    try:
        with (
            _client(cfg, timeout) as client,
            client.stream(
                "GET",
                url,
                params=params,
                headers=headers,
            ) as resp,
        ):
            chunks: list[bytes] = []
            kept = total = wire = 0
            late = False
            # The read timeout bounds each wait; a server trickling a byte at a
            # time would pass every one of them, so the whole read has a deadline.
            deadline = time.monotonic() + timeout

            def counted() -> Iterator[bytes]:
                nonlocal wire
                for raw in resp.iter_raw():
                    wire += len(raw)
                    yield raw

            for chunk in _decoded(counted(), resp.headers.get("content-encoding", "")):
                total += len(chunk)
                if kept < cfg.max_bytes:
                    piece = chunk[: cfg.max_bytes - kept]
                    chunks.append(piece)
                    kept += len(piece)
                elif total > cfg.max_bytes * 4:
                    break  # enough counted: the page is far over the budget
                if wire > cfg.max_bytes * 4:
                    break  # compressed bytes that decode to little are still bytes read
                if time.monotonic() > deadline:
                    late = True
                    break
            meta = {
                "origin": audit_origin(str(resp.url)),
                "address": connected_address(resp),
                "status": resp.status_code,
                "redirects": len(resp.history),
            }
            fetched = _Fetched(
                resp.status_code,
                resp.headers.get("content-type", ""),
                b"".join(chunks),
                total,
                total > kept or late or wire > cfg.max_bytes * 4,
                late,
            )
            return fetched, meta
    except BlockedRequest as exc:
        return refusal(
            "blocked", "dispatch", "url-policy", f"request refused by the URL policy: {exc}"
        )
    except BadEncoding as exc:
        return ToolResult("error", f"[error] {exc}", rule="content-encoding")
    except httpx.TooManyRedirects:
        return ToolResult("error", "[error] too many redirects", rule="too-many-redirects")
    except httpx.TimeoutException:
        return ToolResult("error", f"[error] no answer within {timeout:g} s", rule="timeout")
    except httpx.InvalidURL as exc:
        return ToolResult("error", f"[error] invalid URL: {exc}", rule="invalid-url")
    except httpx.HTTPError as exc:
        return ToolResult("error", f"[error] request failed: {type(exc).__name__}", rule="http")


# -- HTML to readable text -------------------------------------------------------

_SKIP = {"script", "style", "noscript", "template", "svg", "head", "iframe", "object", "canvas"}
_BLOCK = {
    "p",
    "div",
    "section",
    "article",
    "header",
    "footer",
    "main",
    "aside",
    "nav",
    "ul",
    "ol",
    "li",
    "table",
    "tr",
    "br",
    "hr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "pre",
    "blockquote",
    "dl",
    "dt",
    "dd",
    "figure",
    "figcaption",
    "form",
}


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.skip = 0
        self.title: list[str] = []
        self.in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self.skip += 1
        elif tag == "title":
            self.in_title = True
        elif tag in _BLOCK:
            self.out.append("\n")
        if tag == "li" and not self.skip:
            self.out.append("- ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP and self.skip:
            self.skip -= 1
        elif tag == "title":
            self.in_title = False
        elif tag in _BLOCK:
            self.out.append("\n")

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title.append(data)
        elif not self.skip:
            self.out.append(data)


def html_to_text(markup: str) -> tuple[str, str]:
    """(title, readable text) of an HTML document: scripts, styles and other
    non-prose removed, blocks on their own lines, whitespace collapsed."""
    parser = _Text()
    try:
        parser.feed(markup)
        parser.close()
    except Exception:  # noqa: BLE001 - malformed markup still yields what was read
        pass
    lines = []
    for line in "".join(parser.out).splitlines():
        squeezed = re.sub(r"[ \t\r\f\v\u00a0]+", " ", line).strip()
        if squeezed:
            lines.append(squeezed)
    title = re.sub(r"\s+", " ", "".join(parser.title)).strip()
    return title, "\n".join(lines)


def _decode(fetched: _Fetched) -> str:
    m = re.search(r"charset=([\w.-]+)", fetched.ctype, re.I)
    for enc in ((m.group(1),) if m else ()) + ("utf-8",):
        try:
            return fetched.body.decode(enc, errors="replace")
        except LookupError:
            continue
    return fetched.body.decode("utf-8", errors="replace")


def _http_error(fetched: _Fetched, meta: dict[str, Any], who: str) -> ToolResult | None:
    """The error result for an HTTP error status (4xx, 5xx) from ``who``;
    None when the request succeeded."""
    if fetched.status < 400:
        return None
    return ToolResult(
        "error", f"[error] {who} answered HTTP {fetched.status}", rule="http-status", data=meta
    )


_TEXTUAL = ("text/", "application/json", "application/xml", "application/xhtml", "+xml", "+json")


def _bounded(value: Any, low: int, high: int) -> int | None:
    """``value`` as an integer from ``low`` to ``high``, or None."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    if not low <= number <= high:  # also refuses NaN
        return None
    return int(number)


def run_fetch(args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, _: bool) -> ToolResult:
    """web_fetch (seed 004) and web_extract (seed 000): a page's readable text."""
    cfg = _config(rt)
    url = str(args.get("url", ""))
    extract = tool == "web_extract"
    limit: int = FETCH_CHARS
    timeout: float = cfg.timeout_s
    if extract:
        # The schema gate bounds both; a caller that skips it (a script, a
        # test) still never gets an unbounded wait, since the timeout is also
        # the read deadline and sets the connection lifetime.
        chars = _bounded(args.get("max_chars", 12_000), 1, 100_000)
        wait = _bounded(args.get("timeout_seconds", 1), 1, 60)
        if chars is None or wait is None:
            return ToolResult(
                "error",
                "[error] max_chars must be 1 to 100000 and timeout_seconds 1 to 60",
                rule="bad-arguments",
            )
        limit = chars
        if "timeout_seconds" in args:
            timeout = wait
    got = _get(cfg, url, timeout=timeout)
    if isinstance(got, ToolResult):
        return got
    fetched, meta = got
    failed = _http_error(fetched, meta, "the server")
    if failed is not None:
        return failed
    ctype = fetched.ctype.split(";")[0].strip().lower()
    if ctype and not any(t in ctype for t in _TEXTUAL):
        return ToolResult(
            "error",
            f"[error] the response is {ctype}, not text; nothing to read",
            rule="not-text",
            data=meta,
        )
    text = _decode(fetched)
    title = ""
    if "html" in ctype or (not ctype and "<html" in text[:2000].lower()):
        title, text = html_to_text(text)
    notes = []
    if fetched.late:
        notes.append(
            f"[truncated] the server was still sending after {timeout:g} s; "
            f"showing what arrived ({fetched.total} bytes)"
        )
    elif fetched.cut:
        notes.append(
            f"[truncated] the response was {fetched.total} bytes or more; only the first "
            f"{cfg.max_bytes} were read"
        )
    if len(text) > limit:
        notes.append(f"[truncated] {len(text)} characters of text; showing the first {limit}")
        text = text[:limit]
    head = f"# {title}\n\n" if title else ""
    body = head + text + ("\n\n" + "\n".join(notes) if notes else "")
    meta = {**meta, "chars": len(text), "truncated": bool(notes)}
    return ToolResult("ok", body or "(the page has no readable text)", data=meta)


def run_search(args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, _: bool) -> ToolResult:
    """web_search: a JSON list of {title, url, snippet}."""
    cfg = _config(rt)
    query = str(args.get("query", "")).strip()
    count = max(1, min(20, int(args.get("count", 5))))
    if cfg.brave_api_key:
        got = _get(
            cfg,
            cfg.brave_url,
            timeout=cfg.timeout_s,
            params={"q": query, "count": str(count)},
            headers={"X-Subscription-Token": cfg.brave_api_key, "Accept": "application/json"},
        )
        provider = "brave"
    else:
        got = _get(
            cfg,
            cfg.wikipedia_url,
            timeout=cfg.timeout_s,
            params={
                "action": "query",
                "list": "search",
                "srsearch": query,
                "srlimit": str(count),
                "format": "json",
                "utf8": "1",
            },
        )
        provider = "wikipedia"
    if isinstance(got, ToolResult):
        return got
    fetched, meta = got
    failed = _http_error(fetched, meta, f"the {provider} search")
    if failed is not None:
        return failed
    try:
        payload = json.loads(_decode(fetched))
        results = _brave(payload) if provider == "brave" else _wikipedia(payload, cfg)
    except (ValueError, KeyError, TypeError, AttributeError):
        return ToolResult(
            "error",
            f"[error] the {provider} search answered with something that is not a result list",
            rule="bad-search-response",
            data=meta,
        )
    data = {**meta, "provider": provider, "results": len(results[:count])}
    return ToolResult("ok", json.dumps(results[:count], ensure_ascii=False, indent=1), data=data)


def _brave(payload: Any) -> list[dict[str, str]]:
    items = payload.get("web", {}).get("results", [])
    return [
        {
            "title": _plain(str(r.get("title", ""))),
            "url": str(r.get("url", "")),
            "snippet": _plain(str(r.get("description", ""))),
        }
        for r in items
        if isinstance(r, dict)
    ]


def _wikipedia(payload: Any, cfg: WebConfig) -> list[dict[str, str]]:
    base = re.sub(r"/w/api\.php$", "", cfg.wikipedia_url)
    items = payload["query"]["search"]
    return [
        {
            "title": str(r["title"]),
            "url": f"{base}/wiki/" + str(r["title"]).replace(" ", "_"),
            "snippet": _plain(str(r.get("snippet", ""))),
        }
        for r in items
    ]


def _plain(text: str) -> str:
    """Search snippets carry highlight markup; the model wants the words."""
    return html.unescape(re.sub(r"<[^>]+>", "", text)).strip()
