"""Helpers for the ``charter run`` tests: run the CLI in-process (or as a
subprocess when a signal must be sent) and read back its events."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "run"
SCRIPTS = FIXTURES / "scripts"


@dataclass
class Ran:
    code: int
    events: list[dict[str, Any]]
    stdout: str
    stderr: str

    def kinds(self) -> list[str]:
        return [e["kind"] for e in self.events]

    def of(self, kind: str, agent: str | None = None) -> list[dict[str, Any]]:
        return [
            e for e in self.events if e["kind"] == kind and (agent is None or e["agent"] == agent)
        ]

    @property
    def finished(self) -> dict[str, Any]:
        return self.of("run_finished")[-1]

    @property
    def run_dir(self) -> Path:
        return Path(self.of("run_started")[0]["run_dir"])

    def tool_results(self, tool: str) -> list[str]:
        return [e["result"] for e in self.of("tool_finished") if e["tool"] == tool]


RunFn = Callable[..., Ran]


@pytest.fixture
def charter_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Iterator[RunFn]:
    """``charter_run(target, *args, workdir=..., stdin=...)`` runs ``charter
    run`` in this process with ``--json`` and returns its exit code and
    events. ``stdin`` is text, or an open stream (for input that never ends)."""
    from charter.compiler.cli import main

    def run(
        target: Path | str,
        *args: str,
        workdir: Path,
        stdin: str | IO[str] = "",
        json_events: bool = True,
    ) -> Ran:
        stream = io.StringIO(stdin) if isinstance(stdin, str) else stdin
        monkeypatch.setattr(sys, "stdin", stream)
        argv: list[str] = ["run", str(target), *args, "--workdir", str(workdir)]
        if "--config" not in args:
            argv.append("--no-user-config")
        if json_events:
            argv.append("--json")
        code = main(argv)
        out, err = capsys.readouterr()
        events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        return Ran(code, events, out, err)

    yield run


@pytest.fixture
def solo_run(charter_run: RunFn) -> RunFn:
    """``solo_run(script, *args, workdir=..., stdin=...)``: ``charter_run`` of
    the one-stage ``solo`` fixture agent, its model playing
    ``fixtures/run/scripts/<script>``."""

    def run(script: str, *args: str, **options: Any) -> Ran:
        model = ("--model", f"script:{SCRIPTS / script}")
        return charter_run(FIXTURES / "solo", "--agent", "solo", *model, *args, **options)

    return run


def _models_server_module() -> Any:
    """The chat-completions test server of tests/models (its conftest cannot be
    imported by name, so it is loaded from its file)."""
    import importlib.util

    path = REPO / "tests" / "models" / "conftest.py"
    spec = importlib.util.spec_from_file_location("_charter_run_model_server", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def model_server() -> Iterator[Any]:
    yield from _models_server_module()._serve()


@pytest.fixture
def scripted_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[[str], Any]:
    """``scripted_model(script)``: ``charter run`` uses a recording scripted
    model playing ``script`` (whatever ``--model`` says); returns the provider,
    whose ``requests`` hold what the model was sent."""
    from charter.runtime.models.script import ScriptProvider

    def use(script: str) -> Any:
        (tmp_path / "model.yaml").write_text(script, "utf-8")
        provider = ScriptProvider.from_file(tmp_path / "model.yaml", record=True)
        import charter.runtime.models as models

        monkeypatch.setattr(models, "load_provider", lambda *a, **k: provider)
        return provider

    return use


RecordedRun = Callable[..., tuple[Ran, Any]]


@pytest.fixture
def recorded_run(
    charter_run: RunFn, scripted_model: Callable[[str], Any], tmp_path: Path
) -> RecordedRun:
    """``recorded_run(blueprint, script, agent, *args)``: write an
    ``agent.leviath``, run ``charter run`` on it with ``scripted_model(script)``
    and return the run and the provider."""

    def run(blueprint: str, script: str, agent: str, *args: str) -> tuple[Ran, Any]:
        home = tmp_path / "agent"
        home.mkdir(exist_ok=True)
        (home / "agent.leviath").write_text(blueprint, "utf-8")
        provider = scripted_model(script)
        work = tmp_path / "work"
        work.mkdir(exist_ok=True)
        ran = charter_run(home, "--agent", agent, "--model", "script:unused", *args, workdir=work)
        return ran, provider

    return run
