from __future__ import annotations

import os
from pathlib import Path

import pytest

from charter.runtime.policy.env import build_env
from charter.runtime.tools.registry import ToolRuntime


def build_layout(tmp: Path) -> Path:
    """The workspace described at the top of tests/fixtures/paths/cases.txt."""
    ws = tmp / "ws"
    for rel, text in {
        "src/app.py": "print('hi')\n",
        ".env": "API_KEY=abcd1234\n",
        ".env.local": "X=1\n",
        ".ssh/id_rsa": "-----BEGIN KEY-----\n",
        "config/.npmrc": "//registry/:_authToken=zzz\n",
        "certs/server.pem": "pem\n",
        ".git/config": "[core]\n",
        "environment.md": "docs\n",
        "src/env.py": "x = 1\n",
    }.items():
        path = ws / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (ws / "docs").mkdir()
    (tmp / "outside").mkdir()
    (tmp / "outside" / "file.txt").write_text("outside\n", encoding="utf-8")
    (tmp / "ws-evil").mkdir()
    (tmp / "ws-evil" / "secret.txt").write_text("evil\n", encoding="utf-8")
    (ws / "link_in").symlink_to("src")
    (ws / "link_out").symlink_to(tmp / "outside")
    (ws / "passwd").symlink_to("/etc/passwd")
    (ws / "notes.txt").symlink_to(".env")
    (ws / "dangling_out").symlink_to(tmp / "outside" / "new.txt")
    (ws / "dangling_in").symlink_to("src/new.py")
    (ws / "loop_a").symlink_to("loop_b")
    (ws / "loop_b").symlink_to("loop_a")
    (ws / "deep" / "a").mkdir(parents=True)
    (ws / "deep" / "a" / "b").symlink_to("../..")
    (ws / "deep" / "up").symlink_to("../..")
    # hard links: a second name for an outside file, and for the .env
    os.link(tmp / "outside" / "file.txt", ws / "hardlinked.txt")
    os.link(ws / ".env", ws / "settings.txt")
    return ws


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    return build_layout(Path(os.path.realpath(tmp_path)))


@pytest.fixture
def make_rt(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A ToolRuntime over a fresh workspace; keyword arguments override fields."""

    def make(ws: Path | None = None, **fields: object) -> ToolRuntime:
        root = ws if ws is not None else tmp_path / "work"
        root.mkdir(parents=True, exist_ok=True)
        home = tmp_path / "home"
        home.mkdir(exist_ok=True)
        fields.setdefault("env", build_env(os.environ, home=home))
        fields.setdefault("shell", "/bin/sh")
        return ToolRuntime(workspace=root, **fields)  # type: ignore[arg-type]

    return make
