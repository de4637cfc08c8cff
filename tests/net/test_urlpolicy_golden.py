"""Golden URL cases: adding a case is adding a line to tests/fixtures/net/*.txt."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from charter.runtime.net.resolve import StaticResolver
from charter.runtime.net.urlpolicy import REASONS, UrlPolicy, address_text, audit_origin

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "net"
_ESCAPE = re.compile(r"\{U\+([0-9A-Fa-f]{4,6})\}")


def _unescape(text: str) -> str:
    return _ESCAPE.sub(lambda m: chr(int(m[1], 16)), text)


@dataclass(frozen=True)
class Row:
    line: int
    fields: tuple[str, ...]


def _rows(name: str) -> list[Row]:
    rows = []
    for number, raw in enumerate((FIXTURES / name).read_text("utf-8").splitlines(), 1):
        if raw.startswith("#") or raw.strip() == "":
            continue
        rows.append(Row(number, tuple(_unescape(f) for f in raw.split("\t"))))
    return rows


def _params(name: str) -> list[object]:
    return [pytest.param(r, id=f"{name}:{r.line}") for r in _rows(name)]


def _expected(fields: tuple[str, ...], local: bool) -> tuple[str, str]:
    if local and len(fields) == 4:
        return fields[2], fields[3]
    return fields[0], fields[1]


@pytest.mark.parametrize("local", [False, True], ids=["default", "allow_local_network"])
@pytest.mark.parametrize("row", _params("urls.txt"))
def test_literal_decisions(row: Row, local: bool) -> None:
    url, *rest = row.fields
    assert len(rest) in (2, 4), f"urls.txt:{row.line} needs 3 or 5 tab-separated fields"
    decision = UrlPolicy(allow_local_network=local).check(url)
    assert decision.reason in REASONS
    assert (decision.verdict, decision.reason) == _expected(tuple(rest), local), decision.detail
    if decision.verdict == "deny":
        assert decision.addresses == ()
    if decision.verdict == "allow":
        assert decision.addresses and decision.normalized is not None


@pytest.mark.parametrize("row", _params("normalize.txt"))
def test_normalisation(row: Row) -> None:
    url, normalized, origin = row.fields
    decision = UrlPolicy(allow_local_network=True).check(url)
    assert decision.normalized == normalized
    assert decision.origin == origin == audit_origin(url)
    # A normalised URL is a fixed point: parsing it again changes nothing.
    assert UrlPolicy(allow_local_network=True).check(normalized).normalized == normalized


def _answers(spec: str) -> list[str] | BaseException:
    if spec == "!":
        return OSError("SERVFAIL")
    if spec == "-":
        return []
    return spec.split(",")


@pytest.mark.parametrize("local", [False, True], ids=["default", "allow_local_network"])
@pytest.mark.parametrize("row", _params("dns.txt"))
def test_dns_decisions(row: Row, local: bool) -> None:
    url, answers, *rest = row.fields
    policy = UrlPolicy(allow_local_network=local)
    literal = policy.check(url)
    host = literal.host or ""
    resolver = StaticResolver({host: _answers(answers)})
    decision = policy.check(url, resolver)
    assert (decision.verdict, decision.reason) == _expected(tuple(rest), local), decision.detail
    if literal.verdict != "needs-dns":
        # Literal IPs and refused names never reach the resolver.
        assert resolver.calls == []
    if decision.verdict == "allow" and literal.verdict == "needs-dns":
        expected = {address_text(ipaddress.ip_address(a.split("%")[0])) for a in answers.split(",")}
        assert set(decision.addresses) == expected
    if decision.verdict == "deny" and decision.reason not in ("dns-failure", "dns-no-addresses"):
        assert decision.address is not None or literal.verdict == "deny"


def test_golden_file_is_large_enough() -> None:
    # The issue asks for at least 80 literal cases covering every form.
    assert len(_rows("urls.txt")) >= 80
    # Every reason key the policy can produce is expected by some golden line.
    seen = {f for name in ("urls.txt", "dns.txt") for r in _rows(name) for f in r.fields}
    assert set(REASONS) - seen == set()
