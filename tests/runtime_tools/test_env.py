from __future__ import annotations

import os
from pathlib import Path

import pytest

from charter.runtime.policy.env import (
    GIT_SAFETY,
    MAX_BINDINGS,
    SecretBinding,
    build_env,
    call_env,
    effective_timeout,
    forbidden_target,
    validate_bindings,
    validate_overlay,
)

BASE = {
    "PATH": "/usr/bin:/bin",
    "LANG": "en_GB.UTF-8",
    "TERM": "xterm-256color",
    "TZ": "Europe/Berlin",
    "HOME": "/home/me",
    "OPENAI_API_KEY": "sk-live-123456",
    "ANTHROPIC_API_KEY": "sk-ant-abcdef",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-xyz",
    "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE",
    "GITHUB_TOKEN": "ghp_abcdefgh",
    "SLACK_BOT_TOKEN": "xoxb-1234",
    "MCP_SERVER_TOKEN": "mcp-tok",
    "SSH_AUTH_SOCK": "/tmp/agent.sock",
    "LD_PRELOAD": "/evil.so",
    "DEPLOY_KEY": "dk-123456",
}


def test_allowlist_drops_provider_and_cloud_credentials(tmp_path: Path) -> None:
    env = build_env(BASE, home=tmp_path / "home")
    assert env == {
        "PATH": "/usr/bin:/bin",
        "LANG": "en_GB.UTF-8",
        "TERM": "xterm-256color",
        "TZ": "Europe/Berlin",
        "HOME": str(tmp_path / "home"),
        **GIT_SAFETY,
    }


def test_home_is_the_runtime_directory_and_tz_is_configurable(tmp_path: Path) -> None:
    env = build_env({"PATH": "/bin"}, home=tmp_path, tz="UTC")
    assert env["HOME"] == str(tmp_path) and env["TZ"] == "UTC"


def test_overlay_is_applied_after_name_checks(tmp_path: Path) -> None:
    env = build_env(BASE, home=tmp_path, overlay={"DEBUG": "1"})
    assert env["DEBUG"] == "1"
    with pytest.raises(ValueError, match="PATH controls what gets executed"):
        build_env(BASE, home=tmp_path, overlay={"PATH": "/tmp/evil"})


@pytest.mark.parametrize(
    ("overlay", "error"),
    [
        ({"LD_PRELOAD": "/x.so"}, "LD_PRELOAD controls"),
        ({"bash_env": "/x"}, "bash_env controls"),
        ({"1BAD": "x"}, "not a valid variable name"),
        ({"A-B": "x"}, "not a valid variable name"),
        ({"OK": "a\x00b"}, "without NUL"),
    ],
)
def test_overlay_errors(overlay: dict[str, str], error: str) -> None:
    assert any(error in e for e in validate_overlay(overlay))


@pytest.mark.parametrize(
    "name",
    [
        "PATH",
        "HOME",
        "USERPROFILE",
        "SHELL",
        "BASH_ENV",
        "ENV",
        "LD_PRELOAD",
        "LD_LIBRARY_PATH",
        "DYLD_INSERT_LIBRARIES",
        "PYTHONHOME",
        "PYTHONPATH",
        "NODE_OPTIONS",
        "RUBYOPT",
        "PERL5OPT",
        "COMSPEC",
        "GIT_SSH_COMMAND",
        "GIT_CONFIG_KEY_0",
        "ld_preload",
        "Path",
    ],
)
def test_forbidden_targets(name: str) -> None:
    assert forbidden_target(name)


@pytest.mark.parametrize("name", ["GITHUB_TOKEN", "API_KEY", "DEBUG", "PGPASSWORD"])
def test_ordinary_targets(name: str) -> None:
    assert not forbidden_target(name)


def test_binding_needs_the_exact_grant(tmp_path: Path) -> None:
    b = SecretBinding("env:GITHUB_TOKEN", "GH_TOKEN", 30)
    assert validate_bindings([b], ["secret.bind:GITHUB_TOKEN"]) == []
    assert validate_bindings([b], ["secret.bind:*"]) == [
        "secret_bindings[0]: binding GITHUB_TOKEN needs the exact capability "
        "secret.bind:GITHUB_TOKEN"
    ]
    assert validate_bindings([b], ["secret.bind:GITHUB"]) != []
    env = build_env(BASE, home=tmp_path, bindings=[b])
    assert env["GH_TOKEN"] == "ghp_abcdefgh" and "GITHUB_TOKEN" not in env


@pytest.mark.parametrize(
    ("binding", "error"),
    [
        (SecretBinding("GITHUB_TOKEN"), "must have the form env:NAME"),
        (SecretBinding("file:/etc/passwd"), "must have the form env:NAME"),
        (SecretBinding("env:"), "must have the form env:NAME"),
        (SecretBinding("env:GITHUB_TOKEN", "PATH"), "PATH controls what gets executed"),
        (SecretBinding("env:GITHUB_TOKEN", "LD_PRELOAD"), "LD_PRELOAD controls"),
        (SecretBinding("env:GITHUB_TOKEN", "NODE_OPTIONS"), "NODE_OPTIONS controls"),
        (SecretBinding("env:GITHUB_TOKEN", "A B"), "not a valid variable name"),
        (SecretBinding("env:GITHUB_TOKEN", None, 0), "at least 1"),
    ],
)
def test_binding_errors(binding: SecretBinding, error: str) -> None:
    errors = validate_bindings([binding], ["secret.bind:GITHUB_TOKEN"])
    assert any(error in e for e in errors), errors


def test_at_most_sixteen_bindings_and_no_duplicate_targets() -> None:
    many = [SecretBinding(f"env:S{n}") for n in range(MAX_BINDINGS + 1)]
    grants = [f"secret.bind:S{n}" for n in range(MAX_BINDINGS + 1)]
    assert validate_bindings(many, grants) == ["secret_bindings: at most 16 bindings, got 17"]
    twice = [SecretBinding("env:S1", "T"), SecretBinding("env:S2", "T")]
    assert validate_bindings(twice, ["secret.bind:S1", "secret.bind:S2"]) == [
        "secret_bindings[1].target: T is bound twice"
    ]


def test_expiry_clamps_the_timeout() -> None:
    assert effective_timeout(60, []) == 60
    assert effective_timeout(60, [SecretBinding("env:A", None, 90)]) == 60
    assert (
        effective_timeout(60, [SecretBinding("env:A", None, 20), SecretBinding("env:B", None, 5)])
        == 5
    )


def test_unset_source_fails_closed(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not set"):
        build_env(BASE, home=tmp_path, bindings=[SecretBinding("env:NOPE")])


def test_call_env_holds_bound_values_only_inside_the_call() -> None:
    base = {"PATH": "/usr/bin:/bin", "HOME": "/run/home"}
    secrets = {"DEPLOY_TOKEN": "dt-value-0123456789"}
    before = dict(os.environ)
    binding = SecretBinding("env:DEPLOY_TOKEN", target="TOK")
    with call_env(base, overlay={"MODE": "fast"}, bindings=[binding], secrets=secrets) as env:
        assert env == {
            "PATH": "/usr/bin:/bin",
            "HOME": "/run/home",
            "MODE": "fast",
            "TOK": "dt-value-0123456789",
        }
        assert "TOK" not in os.environ and "dt-value-0123456789" not in os.environ.values()
    # The per-call copy is emptied; the run's environment and the secret
    # source were only read; the process environment is as it was.
    assert env == {}
    assert base == {"PATH": "/usr/bin:/bin", "HOME": "/run/home"}
    assert secrets == {"DEPLOY_TOKEN": "dt-value-0123456789"}
    assert dict(os.environ) == before


def test_call_env_empties_the_copy_when_the_call_fails() -> None:
    binding = SecretBinding("env:DEPLOY_TOKEN")
    with pytest.raises(RuntimeError):
        with call_env({}, bindings=[binding], secrets={"DEPLOY_TOKEN": "v" * 12}) as env:
            assert env["DEPLOY_TOKEN"] == "v" * 12
            raise RuntimeError("the command could not run")
    assert env == {}


@pytest.mark.parametrize(
    ("binding", "overlay", "secrets"),
    [
        (SecretBinding("env:DEPLOY_TOKEN", target="PATH"), {}, {"DEPLOY_TOKEN": "v" * 12}),
        (SecretBinding("env:MISSING"), {}, {}),
        (SecretBinding("file:/etc/passwd"), {}, {}),
        (None, {"LD_PRELOAD": "/x.so"}, {}),
    ],
)
def test_call_env_fails_closed(
    binding: SecretBinding | None, overlay: dict[str, str], secrets: dict[str, str]
) -> None:
    with pytest.raises(ValueError):
        with call_env({}, overlay=overlay, bindings=[binding] if binding else [], secrets=secrets):
            raise AssertionError("an invalid environment must never be handed out")
