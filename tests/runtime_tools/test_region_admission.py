"""What a write does to a declared region, by kind, budget and admission
(charter.runtime.tools.regions), each case one line: the region, the writes
made in order, and the entries left (or the refusal of the last write)."""

from __future__ import annotations

from typing import Any

import pytest

from charter.runtime.plan import ContextRegion
from charter.runtime.tools.context import RunStore
from charter.runtime.tools.regions import admit, estimate_tokens, fill_region

# "w:" replaces, "a:" appends; "k=" gives a key. Each word is 4 bytes = 1 token.
CASES: list[tuple[str, dict[str, Any], list[str], list[str] | str]] = [
    ("temporary rolls the oldest off", {"kind": "temporary", "max_tokens": 2},
     ["a:aaaa", "a:bbbb", "a:cccc"], ["bbbb", "cccc"]),
    ("pinned never rolls off", {"kind": "pinned", "max_tokens": 2},
     ["a:aaaa", "a:bbbb", "a:cccc"], "region-full"),
    ("reject refuses while anything is held", {"kind": "temporary", "max_tokens": 2,
     "admission": "reject"}, ["a:aaaa", "a:bbbb", "a:cccc"], "region-full"),
    ("an entry larger than the region is refused", {"kind": "temporary", "max_tokens": 1},
     ["a:aaaa", "w:aaaabbbb"], "region-over-budget"),
    ("a refused replace keeps what was there", {"kind": "temporary", "max_tokens": 1},
     ["a:aaaa", "w:aaaabbbb", "a:"], ["aaaa", ""]),
    ("write replaces the entries", {"kind": "pinned", "max_tokens": 9},
     ["a:aaaa", "a:bbbb", "w:cccc"], ["cccc"]),
    ("sliding window keeps max_items", {"kind": "sliding_window", "max_tokens": 99,
     "max_items": 2}, ["a:1111", "a:2222", "a:3333"], ["2222", "3333"]),
    ("bulk waits for the overflow", {"kind": "sliding_window", "max_tokens": 99,
     "max_items": 2, "strategy": "bulk", "overflow": 2}, ["a:1", "a:2", "a:3", "a:4"],
     ["1", "2", "3", "4"]),
    ("bulk then drops back to max_items", {"kind": "sliding_window", "max_tokens": 99,
     "max_items": 2, "strategy": "bulk", "overflow": 2}, ["a:1", "a:2", "a:3", "a:4", "a:5"],
     ["4", "5"]),
    ("reject sliding window refuses past max_items", {"kind": "sliding_window",
     "max_tokens": 99, "max_items": 1, "admission": "reject"}, ["a:1", "a:2"], "region-full"),
    ("hashmap needs a key", {"kind": "hashmap", "max_tokens": 99}, ["w:x"], "hashmap-needs-key"),
    ("hashmap replaces a key", {"kind": "hashmap", "max_tokens": 99},
     ["w:k=a=1111", "w:k=a=2222"], ["2222"]),
    ("hashmap append joins under the key", {"kind": "hashmap", "max_tokens": 99},
     ["a:k=a=1111", "a:k=a=2222"], ["1111\n2222"]),
    ("hashmap drops the least recent past max_entries", {"kind": "hashmap", "max_tokens": 99,
     "max_entries": 2}, ["w:k=a=1", "w:k=b=2", "w:k=a=3", "w:k=c=4"], ["3", "4"]),
    ("checklist takes no text", {"kind": "checklist", "max_tokens": 99}, ["a:x"],
     "region-is-checklist"),
]  # fmt: skip


def _write(store: RunStore, region: ContextRegion, op: str) -> Any:
    mode, _, rest = op.partition(":")
    key = None
    if rest.startswith("k="):
        key, _, rest = rest[2:].partition("=")
    return admit(store, region, rest, key, replace=mode == "w")


@pytest.mark.parametrize(("what", "spec", "writes", "expected"), CASES, ids=[c[0] for c in CASES])
def test_a_write_to_a_declared_region(
    what: str, spec: dict[str, Any], writes: list[str], expected: list[str] | str
) -> None:
    region = ContextRegion(name="r", **spec)
    store = RunStore(layout={"r": region})
    results = [_write(store, region, op) for op in writes]
    if isinstance(expected, str):
        assert not results[-1].ok and results[-1].rule == expected, results[-1]
        return
    assert all(r.ok for r in results if r.rule != "region-over-budget"), results
    assert [e.content for e in store.regions["r"]] == expected


def test_tokens_are_a_quarter_of_the_utf8_length_rounded_up() -> None:
    assert [estimate_tokens(t) for t in ("", "a", "abcd", "abcde", "é")] == [0, 1, 1, 2, 1]


def test_a_seed_larger_than_its_region_is_cut_and_says_so() -> None:
    region = ContextRegion(name="r", kind="pinned", max_tokens=100)
    store = RunStore(layout={"r": region})
    kept = fill_region(store, region, "x" * 1000)
    [entry] = store.regions["r"]
    assert kept <= 100 and entry.content.endswith("[seed cut to the region's budget of 100 tokens]")
    tiny = ContextRegion(name="t", kind="pinned", max_tokens=3)
    assert fill_region(store, tiny, "y" * 1000) == 3
