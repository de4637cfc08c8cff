"""docs/authored-tools.md states limits and rule names; keep them true."""

from __future__ import annotations

from pathlib import Path

from charter.runtime.tools import authored, skills, tasks

DOC = (Path(__file__).resolve().parents[2] / "docs" / "authored-tools.md").read_text()


def test_figures_match_the_code() -> None:
    assert f"at most {authored.MAX_OUTPUT_MESSAGES} kept" in DOC
    assert f"{authored.MAX_RESULT_CHARS:,} characters" in DOC
    assert f"At most {tasks.MAX_TASKS_PER_RUN} tasks" in DOC
    assert f"last {tasks.TAIL_CHARS:,} characters" in DOC
    assert all(f"`{d}/`" in DOC for d in skills.SUPPORT_DIRS)
    assert sorted(authored.RESERVED_KEYS) == ["approval", "denial", "executionStarted"]


def test_rule_names_in_the_doc_exist_in_the_code() -> None:
    sources = (
        "".join(Path(m.__file__ or "").read_text() for m in (authored, skills))
        # every module of the tasks package
        + "".join(p.read_text() for p in sorted(Path(tasks.__file__ or "").parent.glob("*.py")))
        + Path(skills.__file__ or "").with_name("catalog_tools.py").read_text()
    )
    for rule in (
        "authored-module-changed",
        "capability-not-granted",
        "tool-crashed",
        "skills-root-missing",
        "unknown-task",
        "delegate-invalid",
        "no-history",
        "unknown-session",
        "host-only",
    ):
        assert f"`{rule}`" in DOC, rule
        assert f'"{rule}"' in sources, rule
