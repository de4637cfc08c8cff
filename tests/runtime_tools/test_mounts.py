"""Mounts inside the workspace are not a way out for the file tools.

A bind mount of an outside folder (or of one outside file) placed inside the
workspace shows no symlink and no '..': ``realpath`` walks straight through
it. Each case runs in a child process in a private mount namespace (root
only; skipped elsewhere), so nothing mounted here is seen by the host.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="bind mounts need root and unshare(1)",
)

_CHILD = textwrap.dedent(
    """
    import json, os, subprocess, sys
    from pathlib import Path
    from charter.runtime.policy.env import build_env
    from charter.runtime.policy.workspace import confine
    from charter.runtime.tools import beneath
    from charter.runtime.tools.registry import ToolRuntime, dispatch

    from charter.runtime.policy import workspace

    tmp, mode = Path(sys.argv[1]), sys.argv[2]
    if mode.startswith("walk"):
        beneath._OPENAT2 = False
    if mode == "walk-fdinfo":
        workspace._STATX = False  # an older kernel: mount ids from /proc
    elif beneath._openat2() is None:
        print(json.dumps({"skip": "no openat2"}))
        raise SystemExit(0)
    ws, out = tmp / "ws", tmp / "outside"
    for d in (ws / "mnt", ws / "tm", out / "sub", tmp / "home"):
        d.mkdir(parents=True)
    (out / "secret.txt").write_text("OUTSIDE-SECRET\\n")
    (out / "sub" / "deep.txt").write_text("OUTSIDE-SECRET deep\\n")
    (ws / "plain.txt").write_text("inside\\n")
    (ws / "over.txt").write_text("inside\\n")
    def mount(*args):
        subprocess.run(["mount", *args], check=True)
    mount("--bind", str(out), str(ws / "mnt"))           # same file system
    mount("--bind", str(out / "secret.txt"), str(ws / "over.txt"))  # one file
    mount("-t", "tmpfs", "none", str(ws / "tm"))         # another device
    (ws / "tm" / "t.txt").write_text("OUTSIDE-SECRET tmpfs\\n")
    rt = ToolRuntime(workspace=ws, env=build_env(os.environ, home=tmp / "home"), shell="/bin/sh")
    got = {}
    for label, tool, args in [
        ("read", "read_file", {"path": "mnt/secret.txt"}),
        ("read_deep", "read_file", {"path": "mnt/sub/deep.txt"}),
        ("read_file_mount", "read_file", {"path": "over.txt"}),
        ("read_tmpfs", "read_file", {"path": "tm/t.txt"}),
        ("list", "list_dir", {"path": "mnt"}),
        ("write", "write_file", {"path": "mnt/new.txt", "content": "pwn"}),
        ("write_deep", "write_file", {"path": "mnt/sub/x/new.txt", "content": "pwn"}),
        ("edit", "edit_file", {"path": "mnt/secret.txt", "old_str": "OUTSIDE", "new_str": "X"}),
        ("search", "search_files", {"query": "OUTSIDE-SECRET"}),
        ("plain", "read_file", {"path": "plain.txt"}),
    ]:
        res = dispatch(tool, args, rt)
        got[label] = [res.status, res.rule, res.content]
    # the file tools' own openers, past confinement (a mount made after the check)
    opener, rel = beneath.opener_for(ws, ws / "mnt" / "secret.txt")
    try:
        os.close(opener.open_file(rel, os.O_RDONLY))
        got["opener"] = "opened"
    except beneath.PathChanged:
        got["opener"] = "refused"
    got["check_path"] = confine(ws, "mnt/secret.txt", op="read").rule
    got["outside"] = sorted(p.name for p in out.iterdir())
    got["secret"] = (out / "secret.txt").read_text()
    print(json.dumps(got))
    """
)


def _run(tmp_path: Path, mode: str) -> dict[str, Any]:
    proc = subprocess.run(
        [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            sys.executable,
            "-c",
            _CHILD,
            str(tmp_path),
            mode,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if proc.returncode != 0 and "unshare failed" in proc.stderr:
        pytest.skip(f"no mount namespace here: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr
    got: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    if "skip" in got:
        pytest.skip(got["skip"])
    return got


@pytest.mark.parametrize("mode", ["openat2", "walk", "walk-fdinfo"])
def test_no_file_tool_crosses_a_mount(tmp_path: Path, mode: str) -> None:
    got = _run(Path(os.path.realpath(tmp_path)), mode)
    for label in ("read", "read_deep", "read_file_mount", "read_tmpfs", "list", "write"):
        status, rule, content = got[label]
        assert (status, rule) == ("denied", "path-mount"), (label, content)
    assert got["write_deep"][0] == "denied" and got["edit"][0] == "denied"
    status, _, content = got["search"]
    assert status == "ok" and content.startswith("no matches"), content
    assert "mount point" in content
    assert got["plain"][:2] == ["ok", None]
    assert got["opener"] == "refused"
    assert got["check_path"] == "path-mount"
    # nothing outside was created or changed
    assert got["outside"] == ["secret.txt", "sub"]
    assert got["secret"] == "OUTSIDE-SECRET\n"
