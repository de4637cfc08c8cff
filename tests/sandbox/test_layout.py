"""Planning a sandbox: the mounts, rules and limits a profile becomes on a
host (pure: nothing here needs namespaces)."""

from __future__ import annotations

from pathlib import Path

from _support.sandbox import profile

from charter.runtime.plan import SandboxMount
from charter.runtime.sandbox.landlock import (
    FS_READ,
    FS_WRITE,
    NET_CONNECT_TCP,
    READ_FILE,
    REFER,
    TRUNCATE,
    WRITE_FILE,
    rights_for,
)
from charter.runtime.sandbox.layout import plan_layout
from charter.runtime.sandbox.spec import HostFacts, Place

FULL = HostFacts(landlock_abi=7, namespaces=True, fresh_proc=True, pid_max=True)
LANDLOCK_ONLY = HostFacts(landlock_abi=7, reasons=("no user namespaces",))


def _place(tmp_path: Path, ws: Path, home: Path, **kw: object) -> Place:
    return Place(workspace=ws, home=home, private=tmp_path / "private", **kw)  # type: ignore[arg-type]


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    ws = home / "proj"
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".charter").mkdir()
    return ws, home


def test_the_home_is_hidden_and_the_workspace_bound_back_before_its_protected_paths(
    tmp_path: Path,
) -> None:
    ws, home = _tree(tmp_path)
    lay = plan_layout(profile(), FULL, _place(tmp_path, ws, home))
    order = [(m.target, m.kind, m.writable) for m in lay.mounts]
    assert (str(home), "tmpfs", False) in order
    back = order.index((str(ws), "bind", True))
    git = order.index((str(ws / ".git"), "bind", False))
    assert order.index((str(home), "tmpfs", False)) < back < git
    assert (str(ws / ".charter"), "bind", False) in order
    # Parents are mounted before what lies below them.
    depths = [len(Path(t).parts) for t, _, _ in order]
    assert depths == sorted(depths)


def test_only_the_writable_roots_are_writable(tmp_path: Path) -> None:
    ws, home = _tree(tmp_path)
    env_home = ws / ".charter" / "runs" / "r" / "home"
    lay = plan_layout(profile(), FULL, _place(tmp_path, ws, home, env_home=env_home))
    assert lay.ruleset is not None
    granted = {r.path: r.access for r in lay.ruleset.paths}
    assert set(granted) == {str(ws), "/tmp", "/var/tmp", "/dev", str(env_home)} & (
        set(granted) | {str(ws), "/dev", str(env_home)}
    )
    assert str(home) not in granted and "/etc" not in granted
    assert all(access & WRITE_FILE for access in granted.values())
    # With a mount namespace the view already hides what must not be read.
    assert not lay.ruleset.handled_fs & READ_FILE


def test_a_read_only_workspace_grants_no_write(tmp_path: Path) -> None:
    ws, home = _tree(tmp_path)
    lay = plan_layout(profile(workspace="read"), FULL, _place(tmp_path, ws, home))
    assert lay.ruleset is not None
    assert str(ws) not in {r.path for r in lay.ruleset.paths}
    assert not any(m.target == str(ws / ".git") for m in lay.mounts)  # nothing to protect


def test_a_workspace_that_is_the_home_keeps_the_credentials_hidden(tmp_path: Path) -> None:
    ws, home = _tree(tmp_path)
    lay = plan_layout(profile(), FULL, _place(tmp_path, home, home))
    kinds = [(m.target, m.kind) for m in lay.mounts]
    assert (str(home), "tmpfs") not in kinds  # the workspace itself stays visible
    assert (str(home / ".ssh"), "tmpfs") in kinds
    assert any("is the workspace itself" in n for n in lay.not_contained)


def test_the_runtime_inside_the_workspace_is_read_only(tmp_path: Path) -> None:
    ws, home = _tree(tmp_path)
    venv = ws / ".venv"
    venv.mkdir()
    lay = plan_layout(profile(), FULL, _place(tmp_path, ws, home, runtime=(venv,)))
    assert any(m.target == str(venv) and not m.writable for m in lay.mounts)


def test_user_mounts_under_a_hidden_tree_are_bound_back(tmp_path: Path) -> None:
    ws, home = _tree(tmp_path)
    (home / "datasets").mkdir()
    p = profile(mounts=(SandboxMount(path="~/datasets"),))
    lay = plan_layout(p, FULL, _place(tmp_path, ws, home))
    assert any(m.target == str(home / "datasets") and not m.writable for m in lay.mounts)


def test_the_pid_namespace_bounds_processes_at_least_at_the_kernel_minimum(
    tmp_path: Path,
) -> None:
    ws, home = _tree(tmp_path)
    lay = plan_layout(profile(), FULL, _place(tmp_path, ws, home))
    assert lay.pid_max == 513
    older = HostFacts(landlock_abi=7, namespaces=True, fresh_proc=True, pid_max=False)
    assert plan_layout(profile(), older, _place(tmp_path, ws, home)).pid_max is None


def test_without_namespaces_landlock_restricts_reading_too(tmp_path: Path) -> None:
    ws, home = _tree(tmp_path)
    lay = plan_layout(
        profile(network="proxy"), LANDLOCK_ONLY, _place(tmp_path, ws, home, proxy_port=4567)
    )
    assert lay.mode == "landlock" and lay.ruleset is not None
    granted = {r.path: r.access for r in lay.ruleset.paths}
    assert granted[str(ws)] & FS_WRITE and granted[str(ws)] & FS_READ
    assert granted["/usr"] & READ_FILE and not granted["/usr"] & WRITE_FILE
    assert str(home) not in granted
    assert lay.ruleset.ports == ((4567, NET_CONNECT_TCP),)
    said = " ".join(lay.not_contained)
    assert "pid namespace" in said and "UDP" in said and ".git" in said


def test_a_host_with_nothing_contains_nothing(tmp_path: Path) -> None:
    ws, home = _tree(tmp_path)
    lay = plan_layout(profile(), HostFacts(reasons=("old kernel",)), _place(tmp_path, ws, home))
    assert lay.mode == "none" and "old kernel" in lay.not_contained[0]


def test_landlock_rights_follow_the_abi() -> None:
    fs1, net1, scoped1, dropped1 = rights_for(1, net=True, scopes=True)
    assert not fs1 & (REFER | TRUNCATE) and net1 == 0 and scoped1 == 0
    assert any("refer" in d for d in dropped1) and any("TCP" in d for d in dropped1)
    fs7, net7, scoped7, dropped7 = rights_for(7, net=True, scopes=True)
    assert fs7 & REFER and fs7 & TRUNCATE and net7 and scoped7 and dropped7 == []


def test_home_is_private_unless_it_is_the_workspace(tmp_path: Path) -> None:
    ws, home = _tree(tmp_path)
    inside = ws / ".charter" / "runs" / "r" / "home"
    lay = plan_layout(profile(), FULL, _place(tmp_path, ws, home, env_home=inside))
    assert any(m.target == str(inside) and m.owned for m in lay.mounts)
    lay = plan_layout(profile(), FULL, _place(tmp_path, ws, home, env_home=ws))
    assert not any(m.target == str(ws) and m.owned for m in lay.mounts)
