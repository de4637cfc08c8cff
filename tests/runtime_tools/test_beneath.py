"""The descriptor-relative opener behind the file tools, in both of its modes
(``openat2`` and the component walk), and the file tools on top of it."""

from __future__ import annotations

import os
import threading
import time
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


def _after_confinement(monkeypatch: pytest.MonkeyPatch, act: Any) -> None:
    """Run ``act()`` between the file tools' confinement check and their
    open, as a racing process would."""
    from charter.runtime.tools import files

    real_confined = files._confined

    def confined_then(rt_: ToolRuntime, path: str, op: Any, approved: bool) -> Any:
        got = real_confined(rt_, path, op, approved)
        act()
        return got

    monkeypatch.setattr(files, "_confined", confined_then)


def test_file_tools_report_a_swap_as_a_changed_path(
    tree: Path, mode: str, make_rt: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Confinement sees the real directory; between its check and the open, the
    # directory becomes a link to an outside folder (done here by swapping
    # the path confinement returns, as a racing process would).
    rt: ToolRuntime = make_rt(tree)

    def swap() -> None:
        (tree / "d").rename(tree / "d.real")
        (tree / "d").symlink_to(tree.parent / "out")

    _after_confinement(monkeypatch, swap)
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


def test_replace_drops_the_setuid_and_setgid_bits(tree: Path, mode: str) -> None:
    # New content under a kept setuid bit would be a privilege handed out.
    target = tree / "d" / "e" / "f.txt"
    target.chmod(0o6755)
    Opener(tree).replace(PurePosixPath("d/e/f.txt"), b"#!/bin/sh\n", create_parents=False)
    assert target.stat().st_mode & 0o7777 == 0o755


def test_replace_refuses_a_read_only_file(tree: Path, mode: str) -> None:
    # The rename needs only the folder's permission: without this check a
    # file its owner made read-only would be replaced (by root as by anyone).
    target = tree / "d" / "e" / "f.txt"
    target.chmod(0o444)
    with pytest.raises(PermissionError):
        Opener(tree).replace(PurePosixPath("d/e/f.txt"), b"x", create_parents=False)
    assert target.read_bytes() == b"inside\n"
    assert [p.name for p in target.parent.iterdir()] == ["f.txt"]


def test_replace_writes_only_over_the_file_that_was_read(tree: Path, mode: str) -> None:
    target = tree / "d" / "e" / "f.txt"
    before = target.stat()
    (tree / "d" / "e" / "other.txt").write_text("someone else's\n")
    os.replace(tree / "d" / "e" / "other.txt", target)
    with pytest.raises(PathChanged):
        Opener(tree).replace(
            PurePosixPath("d/e/f.txt"),
            b"edited\n",
            create_parents=False,
            expect=(before.st_dev, before.st_ino),
        )
    assert target.read_text() == "someone else's\n"


def test_edit_of_a_file_replaced_after_it_was_read_writes_nothing(
    tree: Path, mode: str, make_rt: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt: ToolRuntime = make_rt(tree)
    from charter.runtime.tools import files

    real_load = files._load_for_edit

    def load_then_swap(*args: Any) -> Any:
        got = real_load(*args)
        (tree / "d" / "e" / "new.txt").write_text("inside, rewritten\n")
        os.replace(tree / "d" / "e" / "new.txt", tree / "d" / "e" / "f.txt")
        return got

    monkeypatch.setattr(files, "_load_for_edit", load_then_swap)
    res = dispatch("edit_file", {"path": "d/e/f.txt", "old_str": "inside", "new_str": "X"}, rt)
    assert not res.ok and res.rule == "path-changed", res
    assert (tree / "d" / "e" / "f.txt").read_text() == "inside, rewritten\n"


def test_write_of_a_read_only_file_is_refused(tree: Path, mode: str, make_rt: Any) -> None:
    rt: ToolRuntime = make_rt(tree)
    (tree / "d" / "e" / "f.txt").chmod(0o444)
    res = dispatch("write_file", {"path": "d/e/f.txt", "content": "x"}, rt)
    assert (res.status, res.rule) == ("error", "write-not-permitted"), res
    res = dispatch("edit_file", {"path": "d/e/f.txt", "old_str": "inside", "new_str": "X"}, rt)
    assert (res.status, res.rule) == ("error", "write-not-permitted"), res
    assert (tree / "d" / "e" / "f.txt").read_text() == "inside\n"


def test_a_hard_link_made_after_the_check_is_not_read(
    tree: Path, mode: str, make_rt: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Confinement asks about a file with two names; a racing process links
    # an outside file in after that check: the open itself must refuse.
    rt: ToolRuntime = make_rt(tree)
    _after_confinement(
        monkeypatch, lambda: os.link(tree.parent / "out" / "f.txt", tree / "d" / "e" / "g.txt")
    )
    res = dispatch("read_file", {"path": "d/e/g.txt"}, rt)
    assert (res.status, res.rule) == ("denied", "path-hardlink"), res
    assert "OUTSIDE" not in res.content
    (tree / "d" / "e" / "g.txt").unlink()
    res = dispatch("edit_file", {"path": "d/e/g.txt", "old_str": "OUT", "new_str": "IN"}, rt)
    assert (res.status, res.rule) == ("denied", "path-hardlink"), res
    assert (tree.parent / "out" / "f.txt").read_text() == "OUTSIDE\n"


def test_hard_links_ask_and_search_skips_them(tree: Path, mode: str, make_rt: Any) -> None:
    rt: ToolRuntime = make_rt(tree)
    os.link(tree.parent / "out" / "f.txt", tree / "d" / "linked.txt")
    res = dispatch("read_file", {"path": "d/linked.txt"}, rt)
    assert (res.status, res.rule) == ("denied", "path-hardlink"), res
    assert "OUTSIDE" not in res.content
    approved = dispatch("read_file", {"path": "d/linked.txt"}, rt, approved=True)
    assert approved.ok and approved.content == "OUTSIDE\n"
    found = dispatch("search_files", {"query": "OUTSIDE"}, rt)
    assert found.content.startswith("no matches"), found.content
    assert "1 file(s) with several names" in found.content
    # an approved write replaces the file: the outside name keeps its content
    wrote = dispatch("write_file", {"path": "d/linked.txt", "content": "new"}, rt, approved=True)
    assert wrote.ok and (tree.parent / "out" / "f.txt").read_text() == "OUTSIDE\n"


def test_a_fifo_or_device_is_never_opened_for_reading(tree: Path, mode: str, make_rt: Any) -> None:
    # A writer blocks in open() until somebody opens the FIFO for reading:
    # if the file tools opened it (even to find out what it is), the
    # writer would be let through. Opening a device can act the same way.
    rt: ToolRuntime = make_rt(tree)
    opened = threading.Event()

    def writer() -> None:
        fd = os.open(tree / "fifo", os.O_WRONLY)
        opened.set()
        os.close(fd)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    time.sleep(0.2)  # let the writer reach its blocking open()
    try:
        for tool, args in [
            ("read_file", {"path": "fifo"}),
            ("edit_file", {"path": "fifo", "old_str": "a", "new_str": "b"}),
            ("search_files", {"query": "a"}),
        ]:
            res = dispatch(tool, args, rt)
            assert res.rule in ("not-regular", None), res
        assert not opened.wait(0.3), "the FIFO was opened for reading"
    finally:
        release = os.open(tree / "fifo", os.O_RDONLY | os.O_NONBLOCK)
        thread.join(5)
        os.close(release)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_replace_keeps_the_owner(tree: Path, mode: str) -> None:
    # Charter running as root must not hand a user's file over to root.
    target = tree / "d" / "e" / "f.txt"
    os.chown(target, 1234, 2345)
    Opener(tree).replace(PurePosixPath("d/e/f.txt"), b"x", create_parents=False)
    info = target.stat()
    assert (info.st_uid, info.st_gid) == (1234, 2345)
