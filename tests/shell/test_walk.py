"""The tree walk behind recursive programs (grep -r, rg, find, du, ls -R,
tree, diff -r): bounded, loop-safe, and never a way to allow."""

from __future__ import annotations

import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from charter.runtime.shell import ShellPolicy, evaluate
from charter.runtime.shell.walk import WALK_LIMIT


def _judge(ws: Path, command: str) -> tuple[str, str]:
    v = evaluate(command, cwd=ws, workspace=ws, policy=ShellPolicy())
    return v.decision, v.rule


def test_past_the_bound_a_recursive_read_asks(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    per_dir = 1000
    for d in range(WALK_LIMIT // per_dir + 1):
        sub = ws / f"d{d}"
        sub.mkdir(parents=True)
        for f in range(per_dir):
            (sub / f"f{f}").touch()
    start = time.perf_counter()
    assert _judge(ws, "grep -r needle .") == ("ask", "tree-too-large")
    elapsed = time.perf_counter() - start
    assert _judge(ws, "find . -name x") == ("ask", "tree-too-large")
    # a part of the tree small enough is still walked, and allowed
    assert _judge(ws, "grep -r needle d0") == ("allow", "read-only")
    # the bound keeps the walk short (generous: a few ms on an idle machine)
    assert elapsed < 5, elapsed


def test_a_symlink_loop_ends_the_walk(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "a" / "b").mkdir(parents=True)
    (ws / "a" / "b" / "up").symlink_to("../..")
    (ws / "a" / "self").symlink_to(".")
    assert _judge(ws, "grep -R x .") == ("allow", "read-only")
    assert _judge(ws, "find -L . -name x") == ("allow", "read-only")


def test_a_followed_link_to_another_part_of_the_workspace_is_walked(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "vault").mkdir()
    (ws / "vault" / "id_rsa").write_text("k")
    (ws / "src" / "shortcut").symlink_to(ws / "vault")
    assert _judge(ws, "grep -r x src") == ("allow", "read-only")
    assert _judge(ws, "grep -R x src") == ("ask", "credential-path")


def test_an_unreadable_directory_is_skipped_like_the_program_skips_it(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "ok").mkdir(parents=True)
    (ws / "ok" / "a.txt").write_text("")
    assert _judge(ws, "grep -r x ok") == ("allow", "read-only")
    assert _judge(ws, "grep -r x missing") == ("allow", "read-only")


# The prefilter in sensitive_path must never change its answer.
_NAMES = [
    ".env",
    ".ENV",
    ".env.local",
    "x.env",
    "a-.env",
    ".envrc",
    ".npmrc",
    ".NPMRC",
    ".pypirc",
    ".netrc",
    "_netrc",
    ".pgpass",
    ".git-credentials",
    ".htpasswd",
    ".dockercfg",
    ".docker",
    ".aws",
    ".kube",
    ".ssh",
    ".gnupg",
    ".azure",
    ".gcloud",
    ".config/gcloud",
    ".Config/GCloud",
    ".password-store",
    ".boto",
    ".s3cfg",
    "id_rsa",
    "id_dsa.pub",
    "id_ecdsa",
    "ID_ED25519",
    "credentials.json",
    "Service-Account.json",
    "server.pem",
    "a.KEY",
    "x.p12",
    "y.pfx",
    "z.jks",
    "k.keystore",
    "/proc/self/environ",
    "/proc/1/mem",
    "--file=.env",
    "-f.env",
]


def _full(value: str) -> bool:
    from charter.runtime.shell.guard import paths

    return (
        paths._SENSITIVE.search(value) is not None
        or paths.is_sensitive(value)
        or ("=" in value and paths.is_sensitive(value.split("=", 1)[1]))
    )


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(_NAMES),
            st.text(alphabet="./-_=:abcdeEnvpmrsSkKiIdx0ſ", max_size=6),
        ),
        max_size=4,
    ),
)
def test_the_credential_prefilter_never_changes_the_answer(parts: list[str]) -> None:
    from charter.runtime.shell.guard import sensitive_path

    value = "/".join(parts)
    assert sensitive_path(value) == _full(value), value


def _rg_tree(tmp_path: Path, ignore: bytes) -> Path:
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / "neg").mkdir()
    (ws / "neg" / ".ignore").write_bytes(ignore)
    (ws / "neg" / ".env").write_text("TOKEN=1\n")
    (ws / "neg" / "app.js").write_text("token\n")
    return ws


def test_a_negation_anywhere_in_an_ignore_file_is_read(tmp_path: Path) -> None:
    # Past 64 KB, where the walk used to stop reading: ripgrep reads it all.
    ws = _rg_tree(tmp_path, b"#" + b"x" * 100_000 + b"\n!.env\n")
    assert _judge(ws, "rg token neg") == ("ask", "credential-path")


def test_an_ignore_file_too_large_to_read_counts_as_negating(tmp_path: Path) -> None:
    # What the guard does not read could re-include anything: the stricter answer.
    ws = _rg_tree(tmp_path, b"#" + b"x" * (2 << 20) + b"\n")
    assert _judge(ws, "rg token neg") == ("ask", "credential-path")


def test_an_ignore_file_without_a_negation_keeps_hidden_files_hidden(tmp_path: Path) -> None:
    ws = _rg_tree(tmp_path, b"*.log\n")
    assert _judge(ws, "rg token neg") == ("allow", "read-only")


def test_a_negation_in_a_parent_folder_reaches_below(tmp_path: Path) -> None:
    ws = _rg_tree(tmp_path, b"*.log\n")
    (ws / ".rgignore").write_bytes(b"!.env\n")
    assert _judge(ws, "rg token neg") == ("ask", "credential-path")
