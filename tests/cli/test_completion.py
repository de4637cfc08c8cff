"""`charter completion bash|zsh|fish` prints a script generated from the verbs'
own parsers: it completes verbs, options, fixed option values and fixed first
arguments. Bash is exercised for real; zsh and fish when they are installed
(their syntax is checked by the shell itself, and fish is asked to complete)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from charter.compiler.cli import VERBS, main


def _script(capsys: Any, shell: str) -> str:
    assert main(["completion", shell]) == 0
    return str(capsys.readouterr().out)


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_every_verb_and_option_is_in_the_script(shell: str, capsys: Any) -> None:
    text = _script(capsys, shell)
    for verb in VERBS:
        assert verb in text, verb
    for option in ("--model-time-limit", "--model-retries", "--workspace", "--jsonl"):
        assert option.lstrip("-") in text, option
    assert "no-such-option" not in text
    # Old spellings kept as hidden aliases still work but are not offered.
    for hidden in ("workdir", "model-timeout", "--plan"):
        assert hidden not in text, hidden
    assert not re.search(r"--json(?![\w-])|-l json ", text)  # run's old --json


def _bash_complete(script: Path, words: list[str]) -> list[str]:
    line = " ".join(f"'{w}'" for w in words)
    code = (
        f"source {script}; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; _charter; "
        'printf "%s\\n" "${COMPREPLY[@]}"'
    )
    out = subprocess.run(["bash", "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.split()


# words typed (the last one is being completed) -> what must be offered
BASH_CASES = [
    (["charter", "ru"], ["rule", "rules", "run"]),
    (["charter", "run", "--model-"], ["--model-retries", "--model-time-limit"]),
    (["charter", "validate", "--format", ""], ["concise", "github", "json", "sarif", "text"]),
    (["charter", "hook", ""], ["claude-code", "gemini-cli"]),
    (["charter", "completion", ""], ["bash", "fish", "zsh"]),
    (["charter", "check-url", "--js"], ["--jsonl"]),
]


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
@pytest.mark.parametrize(("words", "offered"), BASH_CASES, ids=[" ".join(c[0]) for c in BASH_CASES])
def test_bash_completes(words: list[str], offered: list[str], capsys: Any, tmp_path: Path) -> None:
    script = tmp_path / "charter.bash"
    script.write_text(_script(capsys, "bash"))
    subprocess.run(["bash", "-n", str(script)], check=True)
    assert sorted(_bash_complete(script, words)) == offered


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_the_shell_itself_accepts_the_script(shell: str, capsys: Any, tmp_path: Path) -> None:
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed")
    script = tmp_path / f"charter.{shell}"
    script.write_text(_script(capsys, shell))
    subprocess.run([shell, "-n", str(script)], check=True)


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_completes(capsys: Any, tmp_path: Path) -> None:
    script = tmp_path / "charter.fish"
    script.write_text(_script(capsys, "fish"))

    def complete(line: str) -> list[str]:
        code = f"source {script}; complete -C '{line}'"
        out = subprocess.run(
            ["fish", "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path
        )
        return sorted(row.split("\t")[0] for row in out.stdout.splitlines())

    assert complete("charter ru") == ["rule", "rules", "run"]
    assert complete("charter hook ") == ["claude-code", "gemini-cli"]
    assert "--model-time-limit" in complete("charter run --model")


def test_an_unknown_shell_is_a_usage_error(capsys: Any) -> None:
    assert main(["completion", "powershell"]) == 2
    assert "usage: charter completion" in capsys.readouterr().err
