"""Property tests: the guard never raises and never allows a command with an
unquoted expansion, substitution or an unbalanced quote. (How fast it
answers is measured by bench/shell_guard.py and bench/shell_worst_case.py,
not asserted here: a wall-clock bound fails on a loaded machine.)"""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))
from strategies import has_unquoted_risk, shellish  # noqa: E402

from charter.runtime.shell import ShellPolicy, evaluate  # noqa: E402

WS = "/ws/proj"
POLICY = ShellPolicy()


def _judge(command: str) -> str:
    v = evaluate(command, cwd=WS, workspace=WS, policy=POLICY)
    assert v.decision in ("allow", "ask", "deny")
    assert v.rule and v.message
    return v.decision


COMMON = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@COMMON
@given(shellish())
def test_shellish_commands(command: str) -> None:
    decision = _judge(command)
    if has_unquoted_risk(command):
        assert decision != "allow", command


@COMMON
@given(st.text(max_size=80))
def test_arbitrary_text(command: str) -> None:
    decision = _judge(command)
    if has_unquoted_risk(command):
        assert decision != "allow", command


@COMMON
@given(
    shellish(),
    st.sampled_from(
        [
            "rm -rf /",
            "rm -rf ~",
            "mkfs.ext4 /dev/sda",
            "reboot",
            "dd if=/dev/zero of=/dev/sda",
            "kill -9 -1",
        ]
    ),
)
def test_a_destructive_payload_is_found_anywhere_in_a_list(prefix: str, payload: str) -> None:
    v = evaluate(f"{prefix}\n{payload}", cwd=WS, workspace=WS, policy=POLICY)
    # after a newline the payload is its own command unless the prefix left a
    # quote, heredoc or substitution open
    if not has_unquoted_risk(prefix) and "<<" not in prefix and "\\" not in prefix:
        assert v.decision == "deny", (prefix, v.rule)
    for wrapped in (
        f"sudo {payload}",
        f"bash -c '{payload}'",
        f"echo $({payload})",
        f"true && {payload}",
        f"({payload})",
    ):
        assert evaluate(wrapped, cwd=WS, workspace=WS, policy=POLICY).decision == "deny"
