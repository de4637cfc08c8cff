"""The user's config.toml: golden cases, defaults and the default location."""

from __future__ import annotations

from pathlib import Path

import pytest
from _support.cases import check_case, expected, over_cases

from charter.compiler.frontends.config_toml import (
    SafeShellEntry,
    UserConfig,
    default_config_path,
    load_default_user_config,
    load_user_config,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "toml"


@over_cases(FIXTURES / "config", "*.toml")
def test_config_case(case: Path) -> None:
    loaded = load_user_config(case, "config.toml")
    check_case(case, loaded.diagnostics)
    if not expected(case):
        assert isinstance(loaded.model, UserConfig)


def test_full_config_values() -> None:
    loaded = load_user_config(FIXTURES / "config" / "ok_full.toml", "config.toml")
    cfg = loaded.model
    assert cfg is not None
    assert cfg.taint_tracking and not cfg.batch_tool_hint and cfg.allow == ("web_search",)
    assert cfg.tool_permissions == {"shell": "ask", "write_file": "ask", "web_fetch": "deny"}
    assert cfg.agent_tool_permissions == {"coder": {"shell": "allow"}}
    assert cfg.security.shell_env == "custom" and cfg.security.credential_store == "keychain"
    assert cfg.security.allow_seed_commands is False
    [plain, entry] = cfg.safe_commands.shell
    assert plain == "cargo test"
    assert isinstance(entry, SafeShellEntry)
    assert entry.match == ("make check",) and entry.not_match == ("make install",)
    assert entry.justification == "runs the linters only"
    assert cfg.agent_safe_commands["coder"].allow_blueprint
    assert (
        cfg.tool_script_permissions.shell == "inherit"
        and cfg.tool_script_permissions.env_var == "deny"
    )
    assert cfg.limits.interaction_timeout_secs == 0  # 0 means wait forever, and is accepted
    assert cfg.limits.max_run_write_bytes == 10485760
    assert [s.name for s in cfg.mcp_servers] == ["docs", "search"]
    assert cfg.mcp_servers[0].env == {"TOKEN": "${DOCS_TOKEN}"}  # expanded later, not here
    assert cfg.agent_read_paths["coder"].allow == ("~/design",)


def test_defaults_when_keys_are_absent() -> None:
    cfg = UserConfig()
    assert (cfg.shell_hint, cfg.batch_tool_hint, cfg.taint_tracking) == (True, True, False)
    assert cfg.limits.interaction_timeout_secs == 3600
    assert cfg.limits.script_shell_timeout_secs == 60 and cfg.limits.default_max_iterations == 50
    assert cfg.limits.max_tool_call_write_bytes is None and cfg.limits.max_run_write_bytes is None
    sec = cfg.security
    assert sec.allow_seed_commands and not sec.allow_local_network
    assert not (
        sec.allow_blueprint_permissions
        or sec.allow_blueprint_read_paths
        or sec.allow_blueprint_safe_commands
    )
    assert sec.shell_env == "filtered" and sec.credential_store == "file"
    assert cfg.safe_commands.defaults and cfg.safe_commands.shell == ()
    assert cfg.tool_script_permissions.http_post == "inherit"


def test_empty_tables_take_defaults(tmp_path: Path) -> None:
    p = tmp_path / "config.toml"
    p.write_text("[limits]\n[security]\n", encoding="utf-8")
    loaded = load_user_config(p, "config.toml")
    assert loaded.diagnostics == () and loaded.model == UserConfig()


def test_default_path_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CHARTER_CONFIG", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    assert default_config_path() == tmp_path / "home" / ".config" / "charter" / "config.toml"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert default_config_path() == tmp_path / "xdg" / "charter" / "config.toml"
    # A relative XDG_CONFIG_HOME is invalid by the XDG spec and is ignored.
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/dir")
    assert default_config_path() == tmp_path / "home" / ".config" / "charter" / "config.toml"
    monkeypatch.setenv("CHARTER_CONFIG", str(tmp_path / "explicit.toml"))
    assert default_config_path() == tmp_path / "explicit.toml"


def test_missing_default_file_means_no_config(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CHARTER_CONFIG", str(tmp_path / "absent.toml"))
    assert load_default_user_config() is None
    (tmp_path / "absent.toml").write_text('[tool_permissions]\nshell = "deny"\n', encoding="utf-8")
    loaded = load_default_user_config()
    assert loaded is not None and loaded.model is not None
    assert loaded.model.tool_permissions == {"shell": "deny"}
    assert loaded.display == "<config>/absent.toml"  # no absolute path leaks into output


def test_explicit_missing_file_is_an_error(tmp_path: Path) -> None:
    loaded = load_user_config(tmp_path / "nope.toml", "nope.toml")
    assert loaded.model is None and [d.code for d in loaded.diagnostics] == ["CH106"]


def test_config_model_is_frozen() -> None:
    cfg = UserConfig()
    with pytest.raises(Exception):  # noqa: B017 - pydantic raises ValidationError for frozen models
        cfg.taint_tracking = True  # type: ignore[misc]


def test_top_level_key_under_a_table_is_explained() -> None:
    path = FIXTURES / "config" / "top_level_key_under_table.toml"
    [d] = load_user_config(path, "config.toml").diagnostics
    assert d.help is not None and "read as part of 'limits'" in d.help
    assert "before the first [table] header" in d.help
