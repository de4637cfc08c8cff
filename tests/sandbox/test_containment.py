"""What charter run does with a plan's profiles on a given host: contain,
fall back loudly, or refuse to start (charter.runtime.sandbox.containment)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from _support.sandbox import facts, need_full_sandbox, profile

from charter.compiler.compile import CompileOptions, compile_project
from charter.compiler.frontends.project import load_project
from charter.runtime.sandbox.container import EngineStatus, container_argv, engine_status
from charter.runtime.sandbox.containment import ContainmentRefused, prepare
from charter.runtime.sandbox.spec import HostFacts

REPO = Path(__file__).resolve().parents[2]
NOTHING = HostFacts(reasons=("no user namespaces, no Landlock",))
LANDLOCK_ONLY = HostFacts(landlock_abi=6, reasons=("no user namespaces",))


def _agents(
    tmp_path: Path, sandbox: dict[str, Any] | None = None, stage: dict[str, Any] | None = None
) -> Any:
    src = tmp_path / "coder"
    shutil.copytree(REPO / "blueprints" / "coder", src)
    if stage is not None:
        text = (src / "stages" / "review.toml").read_text()
        (src / "stages" / "review.toml").write_text(text + "\n[sandbox]\n" + tomli_w.dumps(stage))
    config = None
    if sandbox is not None:
        config = tmp_path / "config.toml"
        config.write_text(tomli_w.dumps({"sandbox": sandbox}))
    loaded = load_project(src, config=config, use_default_config=False)
    result = compile_project(loaded, CompileOptions(render_descriptions=False))
    assert result.plan is not None, [str(d) for d in result.diagnostics]
    return result.plan.body.agents


def _prepare(tmp_path: Path, agents: Any, host: HostFacts, *, unattended: bool) -> Any:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return prepare(
        agents,
        workspace=ws,
        private_root=tmp_path / "private",
        env_home=None,
        unattended=unattended,
        host=host,
    )


def test_a_host_that_can_contain_runs_every_stage_contained(tmp_path: Path) -> None:
    need_full_sandbox()
    c = _prepare(tmp_path, _agents(tmp_path), facts(), unattended=True)
    try:
        where = c.stage("coder", "implement")
        assert where.contained and not where.fallback
        assert "network" in where.rules() and "path-outside-workspace" in where.rules()
        assert c.notices == [n for n in c.notices if n.startswith("commands run contained")]
        assert c.agent("coder").contained
    finally:
        c.close()


def test_an_unattended_run_refuses_to_start_uncontained(tmp_path: Path) -> None:
    with pytest.raises(ContainmentRefused, match="unattended run .* does not start uncontained"):
        _prepare(tmp_path, _agents(tmp_path), NOTHING, unattended=True)


def test_an_attended_run_says_once_that_commands_are_not_contained(tmp_path: Path) -> None:
    c = _prepare(tmp_path, _agents(tmp_path), NOTHING, unattended=False)
    try:
        assert len(c.notices) == 1 and "NOT contained" in c.notices[0]
        where = c.stage("coder", "implement")
        assert not where.contained and where.rules() == frozenset()
    finally:
        c.close()


def test_the_users_kind_none_runs_uncontained_and_says_so(tmp_path: Path) -> None:
    c = _prepare(tmp_path, _agents(tmp_path, {"kind": "none"}), NOTHING, unattended=True)
    try:
        assert not c.stage("coder", "discover").contained
        assert any('kind = "none"' in n for n in c.notices)
    finally:
        c.close()


def test_the_users_warn_falls_back_to_what_the_host_can_build(tmp_path: Path) -> None:
    agents = _agents(tmp_path, {"on_unavailable": "warn"})
    c = _prepare(tmp_path, agents, LANDLOCK_ONLY, unattended=True)
    try:
        where = c.stage("coder", "implement")
        assert where.contained and where.sandbox.layout.mode == "landlock"
        assert where.fallback and where.rules() == frozenset()  # no auto-allow in a fallback
        assert "weaker sandbox" in c.notices[0] and "NOT contained" in c.notices[0]
    finally:
        c.close()


def test_a_sandbox_somebody_asked_for_refuses_when_it_cannot_be_built(tmp_path: Path) -> None:
    agents = _agents(tmp_path, {"kind": "namespace"})
    with pytest.raises(ContainmentRefused, match='on_unavailable is "error"'):
        _prepare(tmp_path, agents, NOTHING, unattended=False)


def test_a_stage_that_insists_refuses_even_with_the_users_warn(tmp_path: Path) -> None:
    agents = _agents(tmp_path, {"on_unavailable": "warn"}, stage={"on_unavailable": "error"})
    with pytest.raises(ContainmentRefused, match="stage 'review'"):
        _prepare(tmp_path, agents, NOTHING, unattended=False)


def _engines_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **engines: tuple[int, str]
) -> None:
    """PATH holds only the engines named, each a script that answers
    `ENGINE version` with (exit code, output): what this machine happens to
    have installed, or running, never decides a test."""
    bindir = tmp_path / "engines-bin"
    bindir.mkdir(exist_ok=True)
    for name, (code, said) in engines.items():
        script = bindir / name
        stream = ">&2" if code else ""
        script.write_text(f"#!/bin/sh\necho '{said}' {stream}\nexit {code}\n")
        script.chmod(0o755)
    monkeypatch.setenv("PATH", str(bindir))


DOWN = (1, "Cannot connect to the Docker daemon. Is the docker daemon running?")


def test_a_container_without_an_engine_is_refused_with_the_engines_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agents = _agents(tmp_path, {"kind": "container", "image": "debian:stable"})
    _engines_on_path(tmp_path, monkeypatch)
    with pytest.raises(ContainmentRefused, match="container engine") as err:
        _prepare(tmp_path, agents, NOTHING, unattended=False)
    assert "docker is not on PATH; podman is not on PATH" in str(err.value)


def test_a_client_whose_engine_does_not_answer_is_refused_with_its_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agents = _agents(tmp_path, {"kind": "container", "image": "debian:stable"})
    _engines_on_path(tmp_path, monkeypatch, docker=DOWN)
    with pytest.raises(ContainmentRefused, match="Cannot connect to the Docker daemon"):
        _prepare(tmp_path, agents, NOTHING, unattended=False)


def test_a_container_with_an_answering_engine_is_contained(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agents = _agents(tmp_path, {"kind": "container", "image": "debian:stable"})
    _engines_on_path(tmp_path, monkeypatch, docker=DOWN, podman=(0, "5.0.1"))
    c = _prepare(tmp_path, agents, NOTHING, unattended=True)
    try:
        where = c.stage("coder", "implement")
        assert where.contained and not where.fallback
        assert where.sandbox.engine == "podman"
    finally:
        c.close()


def test_engine_status_tells_a_client_without_an_engine_from_a_missing_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _engines_on_path(tmp_path, monkeypatch, docker=DOWN)
    status = engine_status(None, timeout_s=10)
    assert not status.available and status.engine is None
    assert status.reason == (
        "docker is installed but its engine does not answer: Cannot connect to the Docker "
        "daemon. Is the docker daemon running?; podman is not on PATH"
    )
    assert engine_status("podman").reason == "podman is not on PATH"
    _engines_on_path(tmp_path, monkeypatch, docker=DOWN, podman=(0, "5.0.1"))
    assert engine_status(None) == EngineStatus("podman", True, "podman 5.0.1")
    assert not engine_status("docker").available  # the user's choice is not swapped


def test_the_container_command_line(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    argv = container_argv(
        "docker",
        profile(kind="container", image="debian:stable"),
        ["/bin/sh", "-c", "make test"],
        workspace=ws,
        cwd=ws,
        private_tmp=tmp_path / "tmp",
        env={"PATH": "/usr/bin", "SECRET_TOKEN": "abc", "LANG": "C"},
        home=tmp_path / "home",
        name="charter-1",
        uid=1000,
        gid=1000,
    )
    text = " ".join(argv)
    assert argv[:4] == ["docker", "run", "--rm", "-i"]
    for part in (
        "--cap-drop ALL",
        "--security-opt no-new-privileges",
        "--network none",
        "--user 1000:1000",
        "--pids-limit 512",
        "--memory 8192m",
        f"-v {ws}:{ws}:rw",
        f"-v {ws / '.git'}:{ws / '.git'}:ro",
        f"-v {tmp_path / 'tmp'}:/tmp:rw",
        f"-w {ws} debian:stable /bin/sh -c make test",
    ):
        assert part in text, part
    # Variables are passed by name: no value ever shows in the host's process list.
    assert "-e SECRET_TOKEN" in text and "abc" not in text
