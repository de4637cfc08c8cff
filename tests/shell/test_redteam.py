"""Red-team cases that need a real file system (symlinks): the golden data
runs against a workspace path that does not exist."""

from __future__ import annotations

from pathlib import Path

from charter.runtime.shell import ShellPolicy, evaluate


def _layout(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    outside = tmp_path / "outside" / "deep"
    outside.mkdir(parents=True)
    (ws / "link").symlink_to(outside)
    return ws


def test_dotdot_after_a_symlink_is_resolved_by_the_kernel(tmp_path: Path) -> None:
    # open("link/../x") follows link first, then climbs from its target:
    # the file written is outside/x, not ws/x
    ws = _layout(tmp_path)
    for cmd in ("echo x > link/../x", f"echo x > {ws}/link/../x", "echo x >> sub/../link/../x"):
        v = evaluate(cmd, cwd=ws, workspace=ws, policy=ShellPolicy())
        assert (v.decision, v.rule) == ("deny", "redirect-outside-workspace"), cmd
    v = evaluate("echo x > sub/../x", cwd=ws, workspace=ws, policy=ShellPolicy())
    assert (v.decision, v.rule) == ("ask", "redirect-write")


def test_a_glob_redirect_target_is_matched_against_the_file_system(tmp_path: Path) -> None:
    # bash expands a pattern in a redirect target when it matches one existing
    # file: l*/f is link/f, outside the workspace, which no flag may lift
    ws = _layout(tmp_path)
    (tmp_path / "outside" / "deep" / "f").write_text("")
    (tmp_path / "outside" / "f").write_text("")
    for cmd in ("echo x > l*/f", "echo x > li?k/f", "echo x > [l]ink/../f"):
        v = evaluate(cmd, cwd=ws, workspace=ws, policy=ShellPolicy())
        assert (v.decision, v.rule) == ("deny", "redirect-outside-workspace"), cmd
    v = evaluate("echo x > s*/f", cwd=ws, workspace=ws, policy=ShellPolicy())
    assert v.decision == "ask"
    assert all(w.inside_workspace for w in v.writes)


def test_cd_dash_p_follows_symlinks_before_dotdot(tmp_path: Path) -> None:
    # cd -P resolves link first, so link/.. is the directory above its target
    ws = _layout(tmp_path)
    v = evaluate("cd -P link/.. && echo x > f", cwd=ws, workspace=ws, policy=ShellPolicy())
    assert (v.decision, v.rule) == ("deny", "redirect-outside-workspace")
    # a logical cd (the default) climbs back lexically
    v = evaluate("cd link/.. && echo x > f", cwd=ws, workspace=ws, policy=ShellPolicy())
    assert v.decision == "ask" and all(w.inside_workspace for w in v.writes)


def test_nesting_too_deep_to_parse_is_still_searched_for_payloads() -> None:
    # the parser gives up on extreme nesting (internal-error, ask); the pieces
    # between operators are still judged, so a payload there is refused
    ws = "/ws/proj"
    for cmd in (
        "(" * 1000 + "rm -rf /" + ")" * 1000,
        "echo " + "$(" * 600 + "rm -rf ~" + ")" * 600,
    ):
        v = evaluate(cmd, cwd=ws, workspace=ws, policy=ShellPolicy())
        assert (v.decision, v.rule) == ("deny", "destructive-rm")
    v = evaluate("(" * 1000 + "ls" + ")" * 1000, cwd=ws, workspace=ws, policy=ShellPolicy())
    assert v.decision == "ask"


def test_a_working_directory_outside_the_workspace_is_never_read_only() -> None:
    # relative names are only "inside" when the command runs inside the workspace
    for cwd in ("/etc", "../../etc", "/ws/proj/../other"):
        v = evaluate("cat passwd", cwd=cwd, workspace="/ws/proj", policy=ShellPolicy())
        assert (v.decision, v.rule) == ("ask", "path-outside-workspace"), cwd
    v = evaluate("cat x", cwd="/ws/proj/src", workspace="/ws/proj", policy=ShellPolicy())
    assert v.decision == "allow"


def test_argument_paths_are_resolved_through_symlinks(tmp_path: Path) -> None:
    # `cat link/secret` reads the link's target: its text stays inside the
    # workspace but the file does not, so it is not a read-only allow
    ws = _layout(tmp_path)
    (tmp_path / "outside" / "deep" / "secret").write_text("s")
    (ws / "sub" / "f").write_text("")
    (ws / "direct").symlink_to(tmp_path / "outside" / "deep" / "secret")
    for cmd in (
        "cat link/secret",
        "cat direct",
        "head -n1 link/secret",
        "grep x link/secret",
        "cat l*/secret",
        "wc -l < link/secret",
        f"cat {ws}/link/secret",
        "cat sub/../link/secret",
        "ls link/..",  # the kernel climbs from the link's target
    ):
        v = evaluate(cmd, cwd=ws, workspace=ws, policy=ShellPolicy())
        assert (v.decision, v.rule) == ("ask", "path-outside-workspace"), cmd
    for cmd in ("cat sub/f", "cat sub/../sub/f", "ls sub"):
        v = evaluate(cmd, cwd=ws, workspace=ws, policy=ShellPolicy())
        assert v.decision == "allow", cmd


def test_the_fast_resolution_agrees_with_realpath(tmp_path: Path) -> None:
    # The guard resolves argument paths below the workspace one component at
    # a time; whatever the tree holds (links in and out, chains, dangling
    # links, files in the middle of a path), it must land where realpath does.
    import itertools
    import os

    from charter.runtime.shell.guard.paths import real_below
    from charter.runtime.shell.guard.state import State

    ws = tmp_path / "ws"
    (ws / "d" / "e").mkdir(parents=True)
    (ws / "f").write_text("")
    (ws / "d" / "g").write_text("")
    outside = tmp_path / "out"
    (outside / "x").mkdir(parents=True)
    (ws / "in_link").symlink_to(ws / "d")
    (ws / "out_link").symlink_to(outside)
    (ws / "chain").symlink_to(ws / "out_link")
    (ws / "dangling").symlink_to(tmp_path / "nowhere")
    (ws / "d" / "up").symlink_to("..")
    (ws / "rel").symlink_to("d/e")
    names = ["d", "e", "f", "g", "x", "in_link", "out_link", "chain", "dangling", "up", "rel", "no"]
    st = State("", str(ws), str(ws), os.path.realpath(ws), ShellPolicy())
    checked = 0
    for depth in (1, 2, 3):
        for combo in itertools.product(names, repeat=depth):
            for tail in ("", "/"):
                raw = str(ws) + "/" + "/".join(combo) + tail
                assert real_below(st, raw) == os.path.realpath(raw), raw
                checked += 1
    assert checked > 3000
