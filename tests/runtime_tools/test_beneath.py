"""The descriptor-relative opener behind the file tools, in both of its modes
(``openat2`` and the component walk), and the file tools on top of it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from charter.runtime.tools import beneath
from charter.runtime.tools.beneath import Opener, PathChanged
from charter.runtime.tools.registry import ToolRuntime, dispatch


@pytest.fixture(params=["openat2", "walk"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "openat2":
        if beneath._openat2() is None:
            pytest.skip("this kernel has no openat2 (Linux 5.6+)")
    else:
        monkeypatch.setattr(beneath, "_OPENAT2", False)
    yield request.param


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path))
    ws = root / "ws"
    (ws / "d" / "e").mkdir(parents=True)
    (ws / "d" / "e" / "f.txt").write_text("inside\n")
    (root / "out").mkdir()
    (root / "out" / "f.txt").write_text("OUTSIDE\n")
    (ws / "to_out").symlink_to(root / "out")
    (ws / "to_in").symlink_to("d")
    (ws / "abs_file").symlink_to(root / "out" / "f.txt")
    (ws / "loop").symlink_to("loop")
    os.mkfifo(ws / "fifo")
    return ws


def _read(opener: Opener, rel: str) -> bytes:
    fd = opener.open_file(PurePosixPath(rel), os.O_RDONLY)
    with os.fdopen(fd, "rb") as f:
        return f.read()


def test_a_real_path_opens(tree: Path, mode: str) -> None:
    assert _read(Opener(tree), "d/e/f.txt") == b"inside\n"


@pytest.mark.parametrize(
    "rel",
    ["to_out/f.txt", "to_in/e/f.txt", "abs_file", "loop", "loop/x", "d/../to_out/f.txt"],
)
def test_no_symlink_is_followed_anywhere_on_the_way(tree: Path, mode: str, rel: str) -> None:
    # Even a link that stays inside: the path confinement checked is a real
    # path, so a link on it is new since the check.
    with pytest.raises((PathChanged, OSError)) as info:
        _read(Opener(tree), rel)
    assert not isinstance(info.value, FileNotFoundError) or ".." in rel


def test_dot_dot_is_never_walked(tree: Path, mode: str) -> None:
    with pytest.raises(PathChanged):
        _read(Opener(tree), "d/../../out/f.txt")


def test_a_fifo_does_not_block_the_open(tree: Path, mode: str) -> None:
    fd = Opener(tree).open_file(PurePosixPath("fifo"), os.O_RDONLY)
    try:
        assert not os.path.isfile(f"/proc/self/fd/{fd}")
    finally:
        os.close(fd)


def test_replace_writes_atomically_and_keeps_the_mode(tree: Path, mode: str) -> None:
    target = tree / "d" / "e" / "f.txt"
    target.chmod(0o640)
    existed = Opener(tree).replace(PurePosixPath("d/e/f.txt"), b"new\n", create_parents=False)
    assert existed and target.read_bytes() == b"new\n"
    assert target.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in target.parent.iterdir()] == ["f.txt"]  # no temp file left


def test_replace_creates_missing_parents_by_descriptor(tree: Path, mode: str) -> None:
    existed = Opener(tree).replace(PurePosixPath("n1/n2/x.txt"), b"x", create_parents=True)
    assert not existed and (tree / "n1" / "n2" / "x.txt").read_bytes() == b"x"


def test_replace_refuses_a_link_in_the_parents(tree: Path, mode: str) -> None:
    with pytest.raises(PathChanged):
        Opener(tree).replace(PurePosixPath("to_out/new.txt"), b"x", create_parents=True)
    assert not (tree.parent / "out" / "new.txt").exists()


def test_replace_refuses_a_link_as_the_file(tree: Path, mode: str) -> None:
    with pytest.raises(PathChanged):
        Opener(tree).replace(PurePosixPath("abs_file"), b"x", create_parents=False)
    assert (tree.parent / "out" / "f.txt").read_text() == "OUTSIDE\n"


def test_the_anchor_may_itself_be_reached_through_a_link(tree: Path, mode: str) -> None:
    alias = tree.parent / "alias"
    alias.symlink_to(tree)
    assert _read(Opener(alias), "d/e/f.txt") == b"inside\n"


def test_file_tools_report_a_swap_as_a_changed_path(
    tree: Path, mode: str, make_rt: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Confinement sees the real directory; between its check and the open, the
    # directory becomes a link to an outside folder (done here by swapping
    # the path confinement returns, as a racing process would).
    rt: ToolRuntime = make_rt(tree)
    from charter.runtime.tools import files

    real_confined = files._confined

    def confined_then_swapped(rt_: ToolRuntime, path: str, op: Any, approved: bool) -> Any:
        got = real_confined(rt_, path, op, approved)
        (tree / "d").rename(tree / "d.real")
        (tree / "d").symlink_to(tree.parent / "out")
        return got

    monkeypatch.setattr(files, "_confined", confined_then_swapped)
    res = dispatch("read_file", {"path": "d/e/f.txt"}, rt)
    assert not res.ok and res.rule == "path-changed", res
    assert "OUTSIDE" not in res.content
    (tree / "d").unlink()
    (tree / "d.real").rename(tree / "d")
    res = dispatch("write_file", {"path": "d/e/g.txt", "content": "x"}, rt)
    assert not res.ok and res.rule == "path-changed", res
    assert not (tree.parent / "out" / "e").exists()


def test_confinement_answers_when_a_link_vanishes_while_it_is_read(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A racing process removes the link between lstat and its resolution:
    # the verdict is a refusal, never an exception out of the gate.
    from charter.runtime.policy import workspace

    real = os.path.realpath

    def vanishing(path: Any, *, strict: bool = False) -> str:
        if str(path).endswith("to_in"):
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return real(path, strict=strict)

    monkeypatch.setattr(workspace.os.path, "realpath", vanishing)
    workspace._real_root.cache_clear()
    verdict = workspace.confine(tree, "to_in/e/f.txt", op="read")
    assert verdict.decision == "deny" and verdict.rule == "path-unresolvable"
