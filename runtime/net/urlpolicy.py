"""The URL policy: one decision for every outbound HTTP request Charter makes.

Web tools, the MCP HTTP client and callbacks all ask this module before they
open a connection. It is pure (standard library only, no network): given a URL
string it parses the URL the way a browser would (WHATWG rules for the special
schemes), normalises the host, and decides on the *literal* host alone:

* ``allow``: the host is an IP literal in a public range (or a local range the
  user opted into);
* ``deny``: the URL cannot be understood, or it names a refused target;
* ``needs-dns``: the host is a name that is not refused by itself; only its DNS
  answers can settle the question (see :meth:`UrlPolicy.judge_answers`).

Parsing is deliberately our own instead of :mod:`urllib.parse`: attackers use
the places where two parsers disagree (backslashes, ``@`` in userinfo, ``127.1``,
percent-encoded or full-width hosts), so the policy must read the URL the same
way as the most liberal client that could end up fetching it, and the transport
then connects to exactly the host this module produced.
"""

from __future__ import annotations

import codecs
import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal

from charter.runtime.errors import CharterError
from charter.runtime.net.resolve import ResolutionError, Resolver

__all__ = [
    "UrlVerdict",
    "UrlPolicy",
    "UrlAnswer",
    "address_text",
    "audit_origin",
    "classify_address",
    "parse_host",
    "parse_url",
    "ParsedUrl",
    "UrlError",
    "UrlRefused",
    "MAX_URL_LENGTH",
    "REASONS",
]

UrlAnswer = Literal["allow", "deny", "needs-dns"]
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Every reason key the policy can return, with a one-line meaning. The keys are
# stable: audit logs, tests and the CLI's JSON output depend on them.
REASONS: dict[str, str] = {
    "public-address": "the host is a public IP address",
    "public-name": "every DNS answer for the host is a public address",
    "local-network-allowed": "a local address, allowed because allow_local_network is on",
    "needs-dns": "the host is a name; only its DNS answers can decide",
    "invalid-url": "the URL cannot be parsed",
    "unsupported-scheme": "only http and https are allowed",
    "missing-host": "the URL has no host",
    "invalid-host": "the host is malformed or contains forbidden characters",
    "invalid-port": "the port is not a number from 1 to 65535",
    "localhost-name": "the host is a localhost name",
    "metadata-hostname": "the host names a cloud metadata service",
    "metadata-address": "the address is a cloud metadata endpoint",
    "loopback-address": "the address is a loopback address",
    "private-address": "the address is in a private range (RFC 1918 or IPv6 ULA)",
    "cgnat-address": "the address is in the shared CGNAT range 100.64.0.0/10",
    "link-local-address": "the address is link-local",
    "multicast-address": "the address is multicast",
    "broadcast-address": "the address is the limited broadcast address",
    "unspecified-address": "the address is unspecified or 'this network'",
    "reserved-address": "the address is reserved or not globally routable",
    "documentation-address": "the address is in a documentation range",
    "benchmark-address": "the address is in a benchmarking range",
    "dns-failure": "the host name could not be resolved",
    "dns-no-addresses": "the host name resolved to no addresses",
    "dns-invalid-answer": "a DNS answer is not an IP address",
}

# Address classes the user can open with allow_local_network. Metadata,
# link-local (home of most metadata services), unspecified and the rest stay
# closed whatever the setting.
_LOCAL_CLASSES = frozenset({"loopback-address", "private-address", "cgnat-address"})

_SPECIAL_PORTS = {"http": 80, "https": 443}


class UrlError(CharterError, ValueError):
    """A URL that cannot be understood; ``reason`` is one of :data:`REASONS`."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


# --------------------------------------------------------------------------- address classes

_N4 = ipaddress.IPv4Network
_N6 = ipaddress.IPv6Network

# First match wins, so the specific entries (metadata) come before the ranges
# that contain them (link-local, CGNAT, ULA).
_V4_TABLE: tuple[tuple[ipaddress.IPv4Network, str], ...] = (
    (_N4("169.254.169.254/32"), "metadata-address"),  # AWS, Azure, GCP, OCI, DigitalOcean
    (_N4("169.254.170.2/32"), "metadata-address"),  # AWS ECS task credentials
    (_N4("169.254.170.23/32"), "metadata-address"),  # AWS EKS pod identity
    (_N4("100.100.100.200/32"), "metadata-address"),  # Alibaba Cloud
    (_N4("0.0.0.0/8"), "unspecified-address"),  # Linux routes 0.0.0.0 to the local host
    (_N4("127.0.0.0/8"), "loopback-address"),
    (_N4("10.0.0.0/8"), "private-address"),
    (_N4("172.16.0.0/12"), "private-address"),
    (_N4("192.168.0.0/16"), "private-address"),
    (_N4("100.64.0.0/10"), "cgnat-address"),
    (_N4("169.254.0.0/16"), "link-local-address"),
    (_N4("192.0.0.0/24"), "reserved-address"),  # IETF protocol assignments
    (_N4("192.0.2.0/24"), "documentation-address"),
    (_N4("198.51.100.0/24"), "documentation-address"),
    (_N4("203.0.113.0/24"), "documentation-address"),
    (_N4("192.88.99.0/24"), "reserved-address"),  # deprecated 6to4 relay anycast
    (_N4("198.18.0.0/15"), "benchmark-address"),
    (_N4("224.0.0.0/4"), "multicast-address"),
    (_N4("255.255.255.255/32"), "broadcast-address"),
    (_N4("240.0.0.0/4"), "reserved-address"),
)

# Exact addresses, checked before any embedded IPv4 address is unwrapped.
_V6_EXACT: tuple[tuple[ipaddress.IPv6Network, str], ...] = (
    (_N6("::/128"), "unspecified-address"),
    (_N6("::1/128"), "loopback-address"),
    (_N6("fd00:ec2::254/128"), "metadata-address"),  # AWS IMDS over IPv6
    (_N6("fd00:ec2::23/128"), "metadata-address"),  # AWS EKS pod identity over IPv6
)
_V6_TABLE: tuple[tuple[ipaddress.IPv6Network, str], ...] = (
    (_N6("fe80::/10"), "link-local-address"),
    (_N6("fec0::/10"), "reserved-address"),  # deprecated site-local
    (_N6("fc00::/7"), "private-address"),
    (_N6("ff00::/8"), "multicast-address"),
    (_N6("2001:db8::/32"), "documentation-address"),
    (_N6("3fff::/20"), "documentation-address"),
    (_N6("2001:2::/48"), "benchmark-address"),
    (_N6("2001::/23"), "reserved-address"),  # IETF protocol assignments (ORCHID, ...)
    (_N6("5f00::/16"), "reserved-address"),  # SRv6 segment identifiers
)

_GLOBAL_UNICAST = _N6("2000::/3")
_V4_MAPPED = _N6("::ffff:0:0/96")
_V4_TRANSLATED = _N6("::ffff:0:0:0/96")
_V4_COMPATIBLE = _N6("::/96")
_NAT64_WKP = _N6("64:ff9b::/96")
_NAT64_LOCAL = _N6("64:ff9b:1::/48")
_SIX_TO_FOUR = _N6("2002::/16")
_TEREDO = _N6("2001::/32")


def address_text(addr: IPAddress) -> str:
    """An address as Charter prints it, the same on every Python: an
    IPv4-mapped IPv6 address in RFC 5952's mixed notation (``::ffff:1.2.3.4``),
    which Python 3.13 prints and 3.11 writes in hex (``::ffff:102:304``)."""
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return f"::ffff:{addr.ipv4_mapped}"
    return addr.compressed


def _rfc6052_extract(value: int, prefix_len: int) -> ipaddress.IPv4Address:
    """The IPv4 address embedded after a NAT64 prefix of ``prefix_len`` bits.

    RFC 6052 skips bits 64..71 (the "u" octet), so the 32 address bits may be
    split around it.
    """
    octets = value.to_bytes(16, "big")
    start = prefix_len // 8
    picked = [octets[i] for i in range(start, 16) if i != 8][:4]
    return ipaddress.IPv4Address(bytes(picked))


def _embedded_v4(addr: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """IPv4 addresses an IPv6 address may carry to a v4 host.

    A translator, tunnel or dual-stack socket turns these into IPv4 traffic,
    so the IPv4 address is what must be judged.
    """
    value = int(addr)
    if addr in _V4_MAPPED or addr in _V4_TRANSLATED or addr in _NAT64_WKP:
        return [ipaddress.IPv4Address(value & 0xFFFFFFFF)]
    if addr in _V4_COMPATIBLE:  # :: and ::1 are matched in the table before we get here
        return [ipaddress.IPv4Address(value & 0xFFFFFFFF)]
    if addr in _NAT64_LOCAL:
        # The operator picks the prefix length inside 64:ff9b:1::/48, so every
        # layout RFC 6052 allows is considered and all of them must be safe.
        return [_rfc6052_extract(value, n) for n in (48, 56, 64, 96)]
    if addr in _SIX_TO_FOUR:
        return [ipaddress.IPv4Address((value >> 80) & 0xFFFFFFFF)]
    if addr in _TEREDO:
        server = ipaddress.IPv4Address((value >> 64) & 0xFFFFFFFF)
        client = ipaddress.IPv4Address((value & 0xFFFFFFFF) ^ 0xFFFFFFFF)
        return [server, client]
    return []


def classify_address(addr: IPAddress) -> str:
    """The class of an address: ``"public-address"`` or a refusal reason key.

    IPv6 addresses that embed an IPv4 address are judged by the embedded
    address (the strictest class wins when there are several).
    """
    if isinstance(addr, ipaddress.IPv4Address):
        for net4, cls in _V4_TABLE:
            if addr in net4:
                return cls
        return "public-address"
    if addr.scope_id is not None:
        addr = ipaddress.IPv6Address(addr.compressed.split("%", 1)[0])
    for net6, cls in _V6_EXACT:
        if addr in net6:
            return cls
    embedded = _embedded_v4(addr)
    if embedded:
        classes = [classify_address(v4) for v4 in embedded]
        bad = [c for c in classes if c != "public-address"]
        return _strictest(bad) if bad else "public-address"
    for net6, cls in _V6_TABLE:
        if addr in net6:
            return cls
    if addr not in _GLOBAL_UNICAST:
        return "reserved-address"
    return "public-address"


def _strictest(classes: Iterable[str]) -> str:
    """Prefer a class that allow_local_network cannot open, so an opt-in never
    lets a mixed result through."""
    ordered = sorted(set(classes), key=lambda c: (c in _LOCAL_CLASSES, c))
    return ordered[0]


# --------------------------------------------------------------------------- host names

_LOCALHOST_NAMES = frozenset(
    {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback", "localhost6"}
)
# Names (and their subdomains) that reach a metadata service from inside a cloud.
_METADATA_NAMES = frozenset(
    {
        "metadata.google.internal",
        "metadata.goog",
        "metadata",  # GCE's search path makes the bare name resolve
        "instance-data",  # EC2
        "instance-data.ec2.internal",
        "metadata.tencentyun.com",
        "metadata.platformequinix.com",
        "metadata.packet.net",
    }
)

_LABEL_RE = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
# Characters no host may contain (WHATWG forbidden domain code points plus the
# ones our stricter label check would reject anyway, listed for clear errors).
_FORBIDDEN_HOST = re.compile(r"[\x00-\x20\x7f#%/:<>?@\[\\\]^|]")
_IDNA_DOTS = re.compile("[\u002e\u3002\uff0e\uff61]")


def _is_under(host: str, names: Iterable[str]) -> bool:
    return any(host == n or host.endswith("." + n) for n in names)


def _percent_decode(text: str) -> bytes:
    out = bytearray()
    raw = text.encode("utf-8")
    i = 0
    while i < len(raw):
        b = raw[i]
        if b == 0x25 and _is_hex(raw[i + 1 : i + 3]):
            out.append(int(raw[i + 1 : i + 3], 16))
            i += 3
        else:
            out.append(b)
            i += 1
    return bytes(out)


def _is_hex(chunk: bytes) -> bool:
    return len(chunk) == 2 and all(c in b"0123456789abcdefABCDEF" for c in chunk)


def _parse_ipv4_number(part: str) -> int | None:
    """One dotted part in any legacy radix, or None if it is not a number."""
    if part == "":
        return None
    radix = 10
    if part[:2] in ("0x", "0X"):
        part, radix = part[2:], 16
    elif len(part) > 1 and part[0] == "0":
        part, radix = part[1:], 8
    if part == "":
        return 0
    digits = {10: "0123456789", 16: "0123456789abcdefABCDEF", 8: "01234567"}[radix]
    if not all(c in digits for c in part):
        return None
    if len(part.lstrip("0")) > 16:
        # Far beyond any IPv4 value; also keeps int() away from its limit on
        # very long decimal strings.
        return 1 << 64
    return int(part, radix)


def _ends_in_number(host: str) -> bool:
    parts = host.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    last = parts[-1]
    if last != "" and last.isascii() and last.isdigit():
        return True
    return _parse_ipv4_number(last) is not None


def _parse_legacy_ipv4(host: str) -> ipaddress.IPv4Address:
    """Decimal, hex, octal, short and mixed forms, as browsers and inet_aton read them."""
    parts = host.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    if len(parts) > 4:
        raise UrlError("invalid-host", f"{host!r} ends in a number but has too many parts")
    numbers: list[int] = []
    for part in parts:
        n = _parse_ipv4_number(part)
        if n is None:
            raise UrlError("invalid-host", f"{host!r} ends in a number but is not an IPv4 address")
        numbers.append(n)
    if any(n > 255 for n in numbers[:-1]) or numbers[-1] >= 256 ** (5 - len(numbers)):
        raise UrlError("invalid-host", f"{host!r} has an IPv4 part out of range")
    value = numbers[-1]
    for i, n in enumerate(numbers[:-1]):
        value += n << (8 * (3 - i))
    return ipaddress.IPv4Address(value)


def _idna(host: str) -> str:
    """Unicode host to A-labels (the standard library's IDNA 2003 with nameprep,
    which also maps full-width letters, digits and dots)."""
    if host.isascii():
        return host.lower()
    labels = _IDNA_DOTS.split(host)
    out: list[str] = []
    for i, label in enumerate(labels):
        if label == "" and i == len(labels) - 1:
            out.append("")
            continue
        try:
            out.append(codecs.encode(label, "idna").decode("ascii").lower())
        except UnicodeError as exc:
            raise UrlError("invalid-host", f"the host is not a valid IDNA name: {exc}") from None
    return ".".join(out)


def parse_host(raw: str) -> tuple[str, IPAddress | None]:
    """Normalise a URL host (as written between the authority delimiters).

    Returns the host as it should be written in a URL (IPv6 in brackets,
    names as lowercase A-labels without a trailing dot) and the IP address if
    the host is a literal. Raises :class:`UrlError`.
    """
    if raw == "":
        raise UrlError("missing-host", "the URL has no host")
    if raw.startswith("["):
        if not raw.endswith("]"):
            raise UrlError("invalid-host", "an IPv6 host is missing its closing ']'")
        inner = raw[1:-1]
        # Zone ids (RFC 6874 writes them as %25zone) only select an interface;
        # they never change which address is reached, so they are dropped.
        inner = inner.split("%", 1)[0]
        try:
            v6 = ipaddress.IPv6Address(inner)
        except ValueError:
            raise UrlError("invalid-host", f"{inner!r} is not an IPv6 address") from None
        return f"[{address_text(v6)}]", v6
    try:
        decoded = _percent_decode(raw).decode("utf-8")
    except UnicodeDecodeError:
        raise UrlError("invalid-host", "the percent-decoded host is not UTF-8") from None
    bad = re.search(
        r"[\x00-\x20\x7f-\x9f\u00a0\u1680\u2000-\u200f\u2028-\u202f\u205f\u3000\ufeff]", decoded
    )
    if bad:
        raise UrlError(
            "invalid-host", f"the host contains a control or space character U+{ord(bad[0]):04X}"
        )
    host = _idna(decoded)
    forbidden = _FORBIDDEN_HOST.search(host)
    if forbidden:
        raise UrlError(
            "invalid-host", f"the host contains the forbidden character {forbidden[0]!r}"
        )
    if host in ("", "."):
        raise UrlError("missing-host", "the URL has no host")
    if _ends_in_number(host):
        v4 = _parse_legacy_ipv4(host)
        return str(v4), v4
    if host.endswith("."):
        host = host[:-1]
    if len(host) > 253:
        raise UrlError("invalid-host", "the host name is longer than 253 characters")
    for label in host.split("."):
        if not _LABEL_RE.fullmatch(label):
            raise UrlError("invalid-host", f"the host label {label!r} is not a valid DNS label")
    return host, None


# --------------------------------------------------------------------------- URLs


@dataclass(frozen=True, slots=True)
class ParsedUrl:
    """A URL read with WHATWG rules, userinfo and fragment dropped."""

    scheme: str
    host: str  # URL form: IPv6 in brackets, names as A-labels
    port: int
    path: str
    query: str | None
    address: IPAddress | None

    @property
    def origin(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"

    @property
    def bare_host(self) -> str:
        """The host without IPv6 brackets, as a resolver or socket wants it."""
        return self.host[1:-1] if self.host.startswith("[") else self.host

    def geturl(self) -> str:
        port = "" if _SPECIAL_PORTS[self.scheme] == self.port else f":{self.port}"
        query = "" if self.query is None else "?" + self.query
        return f"{self.scheme}://{self.host}{port}{self.path}{query}"


# Long signed URLs run to a few kilobytes; anything far beyond is refused
# rather than parsed.
MAX_URL_LENGTH = 16384
_C0_AND_SPACE = "".join(chr(c) for c in range(0x21))
_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*")
_PATH_UNSAFE = re.compile(r"[\x00-\x20\x7f\"<>`{}]|[^\x00-\x7f]")
_QUERY_UNSAFE = re.compile(r"[\x00-\x20\x7f\"'<>]|[^\x00-\x7f]")


def _encode(pattern: re.Pattern[str], text: str) -> str:
    return pattern.sub(lambda m: "".join(f"%{b:02X}" for b in m[0].encode("utf-8")), text)


def parse_url(url: str) -> ParsedUrl:
    """Parse ``url`` (absolute, http or https). Raises :class:`UrlError`."""
    # Leading and trailing C0 controls and spaces are trimmed as WHATWG does.
    # Tabs and newlines inside are *removed* by browsers; we refuse them instead,
    # so no reader of this URL can see a different host than we judged.
    if len(url) > MAX_URL_LENGTH:
        raise UrlError("invalid-url", f"the URL is longer than {MAX_URL_LENGTH} characters")
    try:
        url.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates, e.g. from a JSON "\ud800" escape
        raise UrlError("invalid-url", "the URL is not valid Unicode") from None
    text = url.strip(_C0_AND_SPACE)
    if re.search(r"[\t\n\r]", text):
        raise UrlError("invalid-url", "the URL contains a tab or newline")
    colon = text.find(":")
    if colon <= 0 or not _SCHEME_RE.fullmatch(text[:colon]):
        raise UrlError("invalid-url", "the URL has no scheme (expected http:// or https://)")
    scheme = text[:colon].lower()
    if scheme not in _SPECIAL_PORTS:
        raise UrlError("unsupported-scheme", f"the scheme {scheme!r} is not http or https")
    rest = text[colon + 1 :]
    if rest.startswith("//"):
        # An RFC 3986 reader (httpx, urllib, requests, Go, curl) ends the
        # authority only at '/', '?' or '#', so in "http://8.8.8.8\@127.0.0.1/"
        # it sees 127.0.0.1 where a browser sees 8.8.8.8. A backslash there
        # means two readers disagree on the target: refused, whichever we pick.
        rfc_authority = re.split(r"[/?#]", rest[2:], maxsplit=1)[0]
        if "\\" in rfc_authority:
            raise UrlError(
                "invalid-url",
                "a backslash in the authority: browsers end the host there, other URL "
                "parsers read it as part of the userinfo or host",
            )
    # For special schemes any run of '/' and '\' before the authority is skipped.
    rest = rest.lstrip("/\\")
    end = len(rest)
    for delim in "/\\?#":
        i = rest.find(delim)
        if i != -1:
            end = min(end, i)
    authority, tail = rest[:end], rest[end:]
    # Userinfo ends at the *last* '@'; it is dropped, never read as a host.
    hostport = authority.rsplit("@", 1)[-1]
    if hostport.startswith("["):
        close = hostport.find("]")
        if close == -1:
            raise UrlError("invalid-host", "an IPv6 host is missing its closing ']'")
        raw_host, after = hostport[: close + 1], hostport[close + 1 :]
        if after and not after.startswith(":"):
            raise UrlError("invalid-host", "unexpected characters after the IPv6 host")
        raw_port = after[1:] if after else ""
    else:
        raw_host, _, raw_port = hostport.partition(":")
    host, address = parse_host(raw_host)
    if raw_port == "":
        port = _SPECIAL_PORTS[scheme]
    elif raw_port.isascii() and raw_port.isdigit() and 0 < int(raw_port) <= 65535:
        port = int(raw_port)
    else:
        raise UrlError("invalid-port", f"the port {raw_port!r} is not a number from 1 to 65535")
    tail = tail.split("#", 1)[0]  # the fragment never leaves the client
    path, sep, query = tail.partition("?")
    path = path.replace("\\", "/") or "/"
    return ParsedUrl(
        scheme=scheme,
        host=host,
        port=port,
        path=_encode(_PATH_UNSAFE, path),
        query=_encode(_QUERY_UNSAFE, query) if sep else None,
        address=address,
    )


# --------------------------------------------------------------------------- decisions


@dataclass(frozen=True, slots=True)
class UrlVerdict:
    """The policy's answer for one URL.

    ``normalized`` is the URL to fetch (None when it could not be parsed);
    ``addresses`` are the IPs a connection may use (the literal, or every DNS
    answer once they were all judged safe); ``address`` names the address that
    caused a refusal, when one did.
    """

    verdict: UrlAnswer
    reason: str
    normalized: str | None = None
    origin: str | None = None
    host: str | None = None
    port: int | None = None
    addresses: tuple[str, ...] = ()
    address: str | None = None
    detail: str = ""

    @property
    def allowed(self) -> bool:
        return self.verdict == "allow"

    def as_dict(self) -> dict[str, object]:
        return {
            "decision": self.verdict,
            "reason": self.reason,
            "normalized": self.normalized,
            "origin": self.origin,
            "addresses": list(self.addresses),
            "address": self.address,
            "detail": self.detail,
        }


class UrlRefused(CharterError):
    """Raised by the HTTP transports when the policy refuses a request; every
    HTTP stack's refusal error derives from it, so callers catch one type."""

    decision: UrlVerdict

    def __str__(self) -> str:
        decision = getattr(self, "decision", None)
        if decision is None:
            return super().__str__()
        return f"{audit_origin(decision)} refused: {decision.reason} ({decision.detail})"


def audit_origin(target: str | UrlVerdict | ParsedUrl) -> str:
    """What an audit record may show about a URL: ``scheme://host:port``.

    Userinfo, path, query and fragment can carry secrets, so they never reach
    logs or approval prompts. An unparseable URL is shown as ``<invalid-url>``
    rather than echoed.
    """
    if isinstance(target, ParsedUrl):
        return target.origin
    if isinstance(target, UrlVerdict):
        return target.origin or "<invalid-url>"
    try:
        return parse_url(target).origin
    except UrlError:
        return "<invalid-url>"


@dataclass(frozen=True, slots=True)
class UrlPolicy:
    """The decision procedure. ``allow_local_network`` opens loopback, private
    and CGNAT ranges and localhost names; metadata and the other classes stay
    refused."""

    allow_local_network: bool = False

    def _judge(self, cls: str) -> tuple[UrlAnswer, str]:
        if cls == "public-address":
            return "allow", cls
        if self.allow_local_network and cls in _LOCAL_CLASSES:
            return "allow", "local-network-allowed"
        return "deny", cls

    def check(self, url: str, resolver: Resolver | None = None) -> UrlVerdict:
        """Decide on the literal host; with a resolver, also settle ``needs-dns``
        by resolving the name and judging every answer."""
        try:
            parsed = parse_url(url)
        except UrlError as exc:
            return UrlVerdict("deny", exc.reason, detail=exc.message)
        decision = self.check_parsed(parsed)
        if resolver is not None:
            decision = self.resolve(decision, resolver)
        return decision

    def resolve(self, decision: UrlVerdict, resolver: Resolver) -> UrlVerdict:
        """Finish a ``needs-dns`` decision through ``resolver`` (fails closed)."""
        if decision.verdict != "needs-dns" or decision.host is None or decision.port is None:
            return decision
        try:
            answers = resolver.resolve(decision.host, decision.port)
        except (ResolutionError, OSError) as exc:
            return self.dns_failure(decision, str(exc))
        return self.judge_answers(decision, answers)

    def check_parsed(self, parsed: ParsedUrl) -> UrlVerdict:
        base = UrlVerdict(
            "deny",
            "invalid-url",
            normalized=parsed.geturl(),
            origin=parsed.origin,
            host=parsed.bare_host,
            port=parsed.port,
        )
        if parsed.address is not None:
            cls = classify_address(parsed.address)
            verdict, reason = self._judge(cls)
            text = address_text(parsed.address)
            return replace(
                base,
                verdict=verdict,
                reason=reason,
                addresses=(text,) if verdict == "allow" else (),
                address=None if verdict == "allow" else text,
                detail=f"{text}: {REASONS[cls]}",
            )
        host = parsed.host
        if _is_under(host, _METADATA_NAMES):
            return replace(base, reason="metadata-hostname", detail=REASONS["metadata-hostname"])
        if _is_under(host, _LOCALHOST_NAMES) and not self.allow_local_network:
            return replace(base, reason="localhost-name", detail=REASONS["localhost-name"])
        return replace(base, verdict="needs-dns", reason="needs-dns", detail=REASONS["needs-dns"])

    def judge_answers(self, decision: UrlVerdict, answers: Iterable[str]) -> UrlVerdict:
        """Finish a ``needs-dns`` decision with the resolver's answers.

        Every answer must be safe: one refused address refuses the request,
        since the connection could land on any of them. No answers, or an
        answer that is not an IP address, also refuses.
        """
        if decision.verdict != "needs-dns":
            return decision
        answers = tuple(answers)
        if not answers:
            return replace(
                decision,
                verdict="deny",
                reason="dns-no-addresses",
                detail=REASONS["dns-no-addresses"],
            )
        pinned: list[str] = []
        refused: list[tuple[str, str]] = []  # (class, address)
        any_local = False
        for answer in answers:
            try:
                addr = ipaddress.ip_address(answer.split("%", 1)[0])
            except ValueError:
                return replace(
                    decision,
                    verdict="deny",
                    reason="dns-invalid-answer",
                    address=answer,
                    detail=f"{answer!r} is not an IP address",
                )
            cls = classify_address(addr)
            verdict, reason = self._judge(cls)
            if verdict != "allow":
                refused.append((cls, address_text(addr)))
            any_local = any_local or reason == "local-network-allowed"
            if address_text(addr) not in pinned:
                pinned.append(address_text(addr))
        if refused:
            # Report the refusal no setting could lift, so the message does not
            # suggest allow_local_network when it would not help.
            cls = _strictest(c for c, _ in refused)
            bad = next(a for c, a in refused if c == cls)
            return replace(
                decision,
                verdict="deny",
                reason=cls,
                address=bad,
                detail=f"{decision.host} resolves to {bad}: {REASONS[cls]}",
            )
        reason = "local-network-allowed" if any_local else "public-name"
        return replace(
            decision,
            verdict="allow",
            reason=reason,
            addresses=tuple(pinned),
            detail=f"{decision.host} resolves to {', '.join(pinned)}",
        )

    def dns_failure(self, decision: UrlVerdict, message: str) -> UrlVerdict:
        """A ``needs-dns`` decision whose lookup failed: refused (fail closed)."""
        return replace(decision, verdict="deny", reason="dns-failure", detail=message)
