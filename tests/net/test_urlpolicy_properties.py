"""Properties of the URL policy that must hold for every input."""

from __future__ import annotations

import ipaddress

from hypothesis import given, settings
from hypothesis import strategies as st

from charter.runtime.net.urlpolicy import REASONS, UrlPolicy, classify_address

POLICIES = (UrlPolicy(), UrlPolicy(allow_local_network=True))
_URLISH = st.text(
    alphabet=st.sampled_from("htps:/\\@[]%.0123456789abcfx:#?\t \x00ü．"), max_size=40
)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(max_size=60), _URLISH, _URLISH.map(lambda s: "http://" + s)))
def test_never_raises_and_normalised_form_is_stable(text: str) -> None:
    for policy in POLICIES:
        decision = policy.check(text)
        assert decision.reason in REASONS
        if decision.normalized is not None:
            again = policy.check(decision.normalized)
            assert (again.verdict, again.reason, again.normalized) == (
                decision.verdict,
                decision.reason,
                decision.normalized,
            )


def _forms(value: int) -> list[str]:
    a, b, c, d = value.to_bytes(4, "big")
    return [
        str(value),
        hex(value),
        f"0{value:o}",
        f"{a}.{(b << 16) | (c << 8) | d}",
        f"{a}.{b}.{(c << 8) | d}",
        f"0x{a:x}.0{b:o}.{c}.0x{d:X}",
        f"{a}.{b}.{c}.{d}.",
    ]


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_every_legacy_ipv4_spelling_is_judged_like_the_address(value: int) -> None:
    address = ipaddress.IPv4Address(value)
    expected = classify_address(address)
    mapped = classify_address(ipaddress.IPv6Address(f"::ffff:{address}"))
    assert mapped == expected
    for form in _forms(value):
        decision = UrlPolicy().check(f"http://{form}/")
        assert decision.normalized == f"http://{address}/", form
        assert (decision.reason == "public-address") == (expected == "public-address")
        if expected != "public-address":
            assert decision.reason == expected


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_refused_ipv4_stays_refused_inside_every_ipv6_embedding(value: int) -> None:
    v4 = ipaddress.IPv4Address(value)
    expected = classify_address(v4)
    embeddings = [
        ipaddress.IPv6Address(f"64:ff9b::{v4}"),
        ipaddress.IPv6Address((0x2002 << 112) | (value << 80) | 1),
        # Teredo: the client address is stored inverted
        ipaddress.IPv6Address((0x20010000 << 96) | (0x08080808 << 64) | (value ^ 0xFFFFFFFF)),
    ]
    for v6 in embeddings:
        got = classify_address(v6)
        if expected == "public-address":
            assert got == "public-address"
        else:
            assert got == expected, (str(v6), got, expected)


def test_huge_numeric_hosts_are_refused_not_crashing() -> None:
    for host in ("1" * 5000, "0x" + "f" * 5000, "0" + "7" * 5000, "1." + "9" * 40):
        decision = UrlPolicy().check(f"http://{host}/")
        assert (decision.verdict, decision.reason) == ("deny", "invalid-host")
    # Leading zeros only select octal; they do not make a part too large.
    assert UrlPolicy().check("http://" + "0" * 40 + "10.8.8.8/").normalized == "http://8.8.8.8/"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(exclude_categories=()), max_size=80))
def test_any_code_points_including_surrogates(text: str) -> None:
    for url in (text, "http://" + text, "http://a.example/" + text):
        assert UrlPolicy().check(url).reason in REASONS


def test_lone_surrogates_are_refused() -> None:
    # json.loads turns a "\ud800" escape into a lone surrogate, which has no UTF-8 form.
    for url in ("http://a\ud800.example/", "http://a.example/\udfff", "\udc80http://a/"):
        decision = UrlPolicy().check(url)
        assert (decision.verdict, decision.reason) == ("deny", "invalid-url")
