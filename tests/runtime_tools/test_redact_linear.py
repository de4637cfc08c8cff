"""The redactor on hostile output: every step is linear in the text, and a
megabyte of adversarial text is still redacted exactly (no timing here: the
figures are printed by ``bench/redact_worst_case.py``)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charter.runtime.redact import (
    FAILED_MARKER,
    MAX_LEARNED_PER_TEXT,
    Redactor,
    find_secrets,
    head_overlap,
    redacted_views,
    tail_overlap,
)
from charter.runtime.results import ToolResult
from charter.runtime.tools.tasks import StreamRedactor

MB = 1_000_000
KEY = "sk-live-0123456789abcdef"


def _redactor() -> Redactor:
    r = Redactor()
    r.add(KEY, "OPENAI_API_KEY", "env")
    return r


# Each is a megabyte an allowed command can print; the old URL pattern took
# minutes on the first (one unbroken word) and on runs of scheme characters.
HOSTILE = {
    "unbroken word": "a" * MB,
    "scheme characters": ("a+.-" * (MB // 4)),
    "a=": "a=" * (MB // 2),
    "%": "%" * MB,
    "Bearer ": "Bearer " * (MB // 7),
    "x://": "x://" * (MB // 4),
    "opening markers": "<redacted:" * (MB // 10),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_megabyte_of_hostile_text_is_redacted_exactly(name: str) -> None:
    filler = HOSTILE[name]
    # the known key in the middle and at the very end, a URL password after it
    text = filler + KEY + filler + " https://u:pa55-w0rd-xyz@h.example/ " + KEY
    r = _redactor()
    res = redacted_views(ToolResult("ok", text), r)
    assert res.status == "ok"
    want = filler + "<redacted>" + filler + " https://u:<redacted>@h.example/ <redacted>"
    assert res.content == want
    assert KEY not in (res.display or "") and "pa55-w0rd-xyz" not in (res.display or "")


def test_the_stream_redactor_on_a_megabyte_in_small_pieces() -> None:
    r = _redactor()
    text = "a" * MB + KEY + "b" * 1000 + KEY[:10]
    s = StreamRedactor(r)
    out = "".join(s.feed(text[i : i + 4096]) for i in range(0, len(text), 4096))
    assert s.pending == 10  # the possible start of the key, held back
    out += s.feed("", final=True)
    assert out == "a" * MB + "<redacted:OPENAI_API_KEY@env>" + "b" * 1000 + KEY[:10]


def test_a_value_shaped_to_defeat_naive_search_is_found() -> None:
    # A learned value with a long run and a late difference, over a run of
    # the same character: an alternation of values costs the text times the
    # value here; string search does not.
    r = Redactor()
    long_value = "a" * 5000 + "b"
    r.add(long_value, "LONG")
    r.add("zzzz-other", "OTHER")
    text = "a" * 200_000 + "b" + " zzzz-other"
    assert r.redact(text, "operator") == "a" * 195_000 + "<redacted:LONG> <redacted:OTHER>"


def test_an_output_that_shows_too_many_credentials_is_withheld() -> None:
    r = Redactor()
    lines = [f"https://h.example/?token=t0k-{i:06d}" for i in range(MAX_LEARNED_PER_TEXT + 10)]
    res = redacted_views(ToolResult("ok", "\n".join(lines)), r)
    assert (res.status, res.content, res.rule) == ("error", FAILED_MARKER, "redaction-failed")
    assert r.known == MAX_LEARNED_PER_TEXT  # those found first are still hidden later
    fewer = redacted_views(ToolResult("ok", "\n".join(lines[:10])), Redactor())
    assert fewer.status == "ok" and "t0k-" not in fewer.content


def _alternation(text: str, values: list[str]) -> list[tuple[int, int, str]]:
    """The reference: one regex alternation of the values, longest first."""
    ordered = sorted(values, key=len, reverse=True)
    pattern = re.compile("|".join(map(re.escape, ordered)))
    return [(m.start(), m.end(), m.group(0)) for m in pattern.finditer(text)]


_ALPHA = st.text(alphabet="ab-", min_size=1, max_size=40)


@settings(max_examples=300, deadline=None)
@given(_ALPHA, st.lists(st.text(alphabet="ab-", min_size=1, max_size=6), min_size=1, max_size=5))
def test_find_secrets_matches_the_alternation_it_replaces(text: str, values: list[str]) -> None:
    values = list(dict.fromkeys(values))
    ordered = sorted(values, key=len, reverse=True)
    assert list(find_secrets(text, ordered)) == _alternation(text, values)


def _brute_tail(text: str, value: str, least: int) -> int:
    for n in range(min(len(value) - 1, len(text)), least - 1, -1):
        if n and text.endswith(value[:n]):
            return n
    return 0


def _brute_head(text: str, value: str, least: int) -> int:
    for n in range(min(len(value) - 1, len(text)), least - 1, -1):
        if n and text.startswith(value[-n:]):
            return n
    return 0


@settings(max_examples=300, deadline=None)
@given(_ALPHA, st.text(alphabet="ab-", min_size=1, max_size=12), st.integers(1, 4))
def test_overlaps_match_brute_force(text: str, value: str, least: int) -> None:
    assert tail_overlap(text, value, least) == _brute_tail(text, value, least)
    assert head_overlap(text, value, least) == _brute_head(text, value, least)


def test_overlap_search_is_bounded_and_errs_towards_hiding() -> None:
    # Every place is a candidate and none matches: the bounded search gives
    # up and hides from the earliest candidate left, never less than the
    # true overlap.
    value = "a" * 3000 + "b"
    text = "x" + "a" * 2000 + "c" + "a" * 100
    got = tail_overlap(text, value, 4)
    assert got >= _brute_tail(text, value, 4) == 100
    assert got <= len(value) - 1


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet="ab-", max_size=60),
    st.lists(st.text(alphabet="ab-", min_size=4, max_size=8), min_size=1, max_size=4),
    st.lists(st.integers(0, 60), max_size=4),
)
def test_the_stream_equals_the_whole(text: str, values: list[str], cuts: list[int]) -> None:
    r = Redactor()
    for n, v in enumerate(values):
        r.add(v, f"S{n}")
    bounds = sorted({0, len(text), *(c for c in cuts if c <= len(text))})
    s = StreamRedactor(r)
    got = "".join(s.feed(text[a:b]) for a, b in zip(bounds, bounds[1:], strict=False))
    got += s.feed("", final=True)
    assert got == r.redact(text, "stored")


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet="ab-", max_size=60),
    st.lists(st.text(alphabet="ab-", min_size=2, max_size=30), min_size=1, max_size=4),
    st.lists(st.integers(1, 6), min_size=1, max_size=30),
    st.integers(0, 3),
)
def test_the_stream_equals_the_whole_when_long_prefixes_are_held_piecewise(
    text: str, values: list[str], sizes: list[int], learn_at: int
) -> None:
    """The held-back text of a long secret's prefix is kept piece by piece
    (so a megabyte secret does not make the stream quadratic). With that
    state entered as early as possible, the stream gives exactly what it
    gives without it, also when a value is learned part-way through; and
    with every value known from the start, the whole text's redaction."""
    from unittest import mock

    import charter.runtime.tools.tasks.stream as stream_module

    early, late = values[:1], values[1:]
    pieces: list[str] = []
    pos = 0
    for size in sizes:
        pieces.append(text[pos : pos + size])
        pos += size
    pieces.append(text[pos:])

    def run(threshold: int) -> tuple[list[str], Redactor]:
        r = Redactor()
        for n, v in enumerate(early):
            r.add(v, f"S{n}")
        with mock.patch.object(stream_module, "_PREFIX_STATE_MIN", threshold):
            s = StreamRedactor(r)
            emitted: list[str] = []
            for n, piece in enumerate(pieces):
                if n == learn_at:
                    for m, v in enumerate(late):
                        r.add(v, f"L{m}")
                emitted.append(s.feed(piece))
            emitted.append(s.feed("", final=True))
        return emitted, r

    # Piece by piece, not only in total: holding back more than needed
    # would delay output that a live view shows.
    got, r = run(1)
    assert got == run(10**9)[0]
    if learn_at == 0 or not late:
        assert "".join(got) == r.redact(text, "stored")


def test_a_megabyte_secret_arriving_in_pieces_is_held_without_rescanning() -> None:
    """A secret as long as the stream (a URL password of a megabyte, learned
    from the output itself) is held back piece by piece and redacted whole."""
    secret = ":" * 1_000_000
    r = Redactor()
    r.add(secret, "S")
    s = StreamRedactor(r)
    body = secret[:-1]
    out = "".join(s.feed(body[i : i + 4096]) for i in range(0, len(body), 4096))
    assert out == "" and s.pending == len(body)
    out += s.feed(":") + s.feed("", final=True)
    assert out == r.redact(secret, "stored") and secret not in out
