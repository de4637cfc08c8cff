from __future__ import annotations

import os
from pathlib import Path

import pytest

from charter.runtime.policy.workspace import confine, decide_path, is_sensitive

CASES = Path(__file__).resolve().parent.parent / "fixtures" / "paths" / "cases.txt"


def _cases() -> list[tuple[str, str, str, str]]:
    rows = []
    for n, line in enumerate(CASES.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.split("\t")
        assert len(cols) == 4, f"cases.txt:{n}: expected 4 tab-separated columns"
        rows.append((cols[0], cols[1], cols[2], cols[3]))
    return rows


@pytest.mark.parametrize(("op", "path", "decision", "rule"), _cases())
def test_case(layout: Path, op: str, path: str, decision: str, rule: str) -> None:
    path = path.replace("{ws}", str(layout)).replace("{tmp}", str(layout.parent))
    got = confine(layout, path, op=op)  # type: ignore[arg-type]
    assert (got.decision, got.rule) == (decision, rule), got.message
    if decision == "deny":
        assert got.resolved is None
    else:
        real = Path(os.path.realpath(layout))
        assert got.resolved is not None
        assert got.resolved == real or got.resolved.is_relative_to(real)


def test_cases_cover_every_rule() -> None:
    rules = {row[3] for row in _cases()}
    assert {
        "path-inside",
        "path-traversal",
        "path-outside",
        "path-symlink-escape",
        "path-sensitive",
        "path-encoded",
        "path-home",
        "path-nul",
        "path-drive",
        "path-unc",
        "path-hardlink",
    } - rules == {"path-nul"}  # NUL cannot be written in a text data file: tested below


def test_nul_byte(layout: Path) -> None:
    got = confine(layout, "src/app.py\x00.txt", op="read")
    assert (got.decision, got.rule) == ("deny", "path-nul")


def test_resolved_is_the_real_target(layout: Path) -> None:
    got = confine(layout, "link_in/app.py", op="read")
    assert got.resolved == layout / "src" / "app.py"


def test_workspace_given_through_a_symlink(layout: Path) -> None:
    alias = layout.parent / "alias"
    alias.symlink_to(layout)
    assert confine(alias, "src/app.py", op="read").decision == "allow"
    assert confine(alias, str(layout / "src" / "app.py"), op="read").decision == "allow"
    assert confine(alias, "link_out/file.txt", op="read").rule == "path-symlink-escape"


def test_missing_workspace_fails_closed(tmp_path: Path) -> None:
    got = confine(tmp_path / "nope", "a.txt", op="read")
    assert (got.decision, got.rule) == ("deny", "workspace-missing")


def test_unknown_op_fails_closed(layout: Path) -> None:
    assert confine(layout, "src/app.py", op="exec").decision == "deny"  # type: ignore[arg-type]


def test_decide_path_is_json_ready(layout: Path) -> None:
    got = decide_path(layout, "../ws-evil/secret.txt", "read")
    assert got == {
        "decision": "deny",
        "rule": "path-traversal",
        "message": got["message"],
        "path": "../ws-evil/secret.txt",
        "op": "read",
        "resolved": None,
    }
    assert decide_path(str(layout), "src/app.py", "write")["resolved"] == str(
        layout / "src" / "app.py"
    )
    assert decide_path(layout, "src/app.py", "delete")["rule"] == "path-op"


@pytest.mark.parametrize(
    ("rel", "sensitive"),
    [
        (".env", True),
        ("a/b/.env.test", True),
        (".ssh", True),
        ("x/.aws/config", True),
        (".config/gcloud/credentials.db", True),
        ("keys/deploy.key", True),
        ("src/main.py", False),
        ("keys.md", False),
        ("docs/ssh.md", False),
    ],
)
def test_is_sensitive(rel: str, sensitive: bool) -> None:
    assert is_sensitive(rel) is sensitive


_PIECES = [
    "..",
    ".",
    "src",
    "app.py",
    "link_in",
    "link_out",
    "deep",
    "a",
    "b",
    "up",
    "new",
    "file.txt",
]


def test_agrees_with_the_kernel(layout: Path) -> None:
    """Differential check: whenever a path exists, the decision's resolved path
    is what the kernel opens, and anything not denied is inside the workspace."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    real_root = os.path.realpath(layout)

    @settings(max_examples=400, deadline=None, database=None)
    @given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=6), st.booleans())
    def check(pieces: list[str], absolute: bool) -> None:
        rel = "/".join(pieces)
        path = f"{layout}/{rel}" if absolute else rel
        got = confine(layout, path, op="read")
        target = os.path.join(layout, rel)
        if got.decision == "deny":
            if os.path.exists(target):
                real = os.path.realpath(target)
                # only refused when the kernel would leave the workspace, or for '..'
                # after a missing directory
                assert not (real == real_root or real.startswith(real_root + os.sep)) or (
                    got.rule == "path-traversal"
                ), (path, got)
            return
        assert got.resolved is not None
        assert str(got.resolved) == real_root or str(got.resolved).startswith(real_root + os.sep)
        if os.path.exists(target):
            assert str(got.resolved) == os.path.realpath(target), path

    check()


@pytest.mark.parametrize("path", ["\ud800", "src/a\udc2e.py", "\udfff/x"])
def test_a_lone_surrogate_is_refused_not_raised(layout: Path, path: str) -> None:
    # JSON can carry "\ud800"; no file name can: refused, never a traceback
    # out of the gate, a hook or check-path.
    for op in ("read", "write"):
        got = confine(layout, path, op=op)  # type: ignore[arg-type]
        assert (got.decision, got.rule) == ("deny", "path-encoded"), got.message
    assert decide_path(layout, path, "read")["rule"] == "path-encoded"


def test_an_undecodable_byte_names_its_file(layout: Path) -> None:
    # "\udcff" is how Python spells the byte 0xFF of a non-UTF-8 name
    got = confine(layout, "src/bad\udcffname.txt", op="write")
    assert got.decision == "allow" and got.resolved == layout / "src" / "bad\udcffname.txt"


def test_a_path_past_path_max_is_a_verdict_not_a_traceback(layout: Path) -> None:
    # Each name fits NAME_MAX, the whole does not fit PATH_MAX once the
    # workspace is in front: lstat raised ENAMETOOLONG out of confine.
    name = "n" * 250
    fd = os.open(layout, os.O_RDONLY)
    try:
        for _ in range(16):
            os.mkdir(name, dir_fd=fd)
            nxt = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nxt
    finally:
        os.close(fd)
    path = "/".join([name] * 16) + "/" + "x" * 70
    assert len(path) <= 4096 < len(str(layout)) + len(path)
    for op in ("read", "write"):
        got = confine(layout, path, op=op)  # type: ignore[arg-type]
        assert (got.decision, got.rule) == ("deny", "path-unresolvable"), got.message


def test_control_characters_are_exactly_unicodes_cc() -> None:
    # confine finds them with one regex scan: it must be the same set
    import sys
    import unicodedata

    from charter.runtime.policy import workspace

    for code in range(sys.maxunicode + 1):
        c = chr(code)
        assert bool(workspace._CONTROL.search(c)) == (unicodedata.category(c) == "Cc"), hex(code)
