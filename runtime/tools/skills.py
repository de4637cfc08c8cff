"""Skill tools: skills_list, skill_view and skill_manage.

A skill is a directory ``<skills root>/<name>/`` holding ``SKILL.md`` (an
optional YAML front matter with ``description`` and ``category``, then the
instructions) and support files under ``references/``, ``templates/``,
``scripts/`` or ``assets/``. The skills root is the agent core's configured
``slots.skills`` directory, handed to the run as ``ToolRuntime.skills_root``;
without one every skill tool says so and touches nothing.

Every path a call names is checked before anything is opened: absolute
paths, ``..``, hidden segments (``.git``, ``.env``), backslashes, empty
segments and files outside the four support folders are refused, and the
resolved path (symlinks followed) must still be below the skill, which must
itself be below the skills root.

skill_manage is an ``fs.write`` tool that asks by default; the gate
pipeline obtains that approval before any of this runs. Writes replace files
atomically. Skills are read from disk on every call and are not part of the
system prompt, so a change applies from the next call (the current model
turn has already been produced).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from charter.runtime.atomic import write_atomic
from charter.runtime.capped import read_regular
from charter.runtime.results import ToolResult, refusal

if TYPE_CHECKING:
    from charter.runtime.tools.base import ToolRuntime

__all__ = [
    "MAX_SKILL_BYTES",
    "SKILL_FILE",
    "SUPPORT_DIRS",
    "check_support_path",
    "run_list",
    "run_manage",
    "run_view",
]

SKILL_FILE = "SKILL.md"
SUPPORT_DIRS = ("references", "templates", "scripts", "assets")
MAX_SKILL_BYTES = 1_000_000
MAX_SKILLS_LISTED = 500
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


def _err(rule: str, message: str, status: Any = "error") -> ToolResult:
    return refusal(status, "dispatch", rule, message)


def _root(rt: ToolRuntime) -> Path | ToolResult:
    root = rt.skills_root
    if root is None:
        return _err(
            "skills-root-missing",
            "this agent core configures no skills directory (slots.skills), so there are no "
            "skills to list, view or change",
            "unavailable",
        )
    return Path(root).resolve()


def _check_name(name: Any) -> str | None:
    if not isinstance(name, str) or not _NAME.match(name) or ".." in name:
        return f"skill name {name!r} must be letters, digits, '.', '_' or '-' (no '..')"
    return None


def check_support_path(file_path: Any) -> str | None:
    """Why ``file_path`` is not an acceptable support-file path, or None."""
    if not isinstance(file_path, str) or not file_path:
        return "file_path must be a non-empty relative path"
    if "\x00" in file_path or "\\" in file_path:
        return "file_path may not contain backslashes or NUL bytes"
    if file_path.startswith("/") or re.match(r"^[A-Za-z]:", file_path):
        return "file_path must be relative to the skill, not absolute"
    parts = file_path.split("/")
    if any(p == ".." for p in parts):
        return "file_path may not use '..'"
    if any(p == "" or p == "." for p in parts):
        return "file_path may not have empty or '.' segments"
    if any(p.startswith(".") for p in parts):
        return "file_path may not name hidden files or folders"
    if len(parts) < 2 or parts[0] not in SUPPORT_DIRS:
        return "support files live under " + ", ".join(f"{d}/" for d in SUPPORT_DIRS)
    return None


def _inside(base: Path, path: Path) -> bool:
    return path == base or base in path.parents


def _skill_dir(root: Path, name: Any) -> Path | ToolResult:
    problem = _check_name(name)
    if problem is not None:
        return _err("skill-bad-name", problem, "invalid")
    path = root / str(name)
    resolved = path.resolve()
    if not _inside(root, resolved) or resolved == root:
        return _err(
            "skill-outside-root", f"skill {name!r} resolves outside the skills directory", "denied"
        )
    return resolved


def _target(root: Path, skill: Path, file_path: Any, *, allow_skill_md: bool) -> Path | ToolResult:
    if allow_skill_md and file_path in (None, SKILL_FILE):
        return skill / SKILL_FILE
    problem = check_support_path(file_path)
    if problem is not None:
        return _err("skill-path-refused", problem, "denied")
    resolved = (skill / PurePosixPath(str(file_path))).resolve()
    if not _inside(skill, resolved) or not _inside(root, resolved):
        return _err(
            "skill-path-refused", f"{file_path!r} resolves outside the skill's folder", "denied"
        )
    return resolved


def _front_matter(text: str) -> dict[str, str]:
    if not text.startswith("---"):
        return {}
    end = text.find("\n---", 3)
    if end < 0:
        return {}
    import yaml  # only skill listing pays for the parser

    try:
        data = yaml.safe_load(text[3:end])
    except yaml.YAMLError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): str(v) for k, v in data.items() if isinstance(v, str | int)}


def _read_text(path: Path) -> str | ToolResult:
    try:
        data = read_regular(path, MAX_SKILL_BYTES)
        if data is None:
            return _err("skill-file-unreadable", f"{path.name} is not a regular file")
        if len(data) > MAX_SKILL_BYTES:
            return _err(
                "skill-file-too-large", f"{path.name} is larger than {MAX_SKILL_BYTES} bytes"
            )
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return _err("skill-file-binary", f"{path.name} is not UTF-8 text")
    except OSError as exc:
        return _err("skill-file-unreadable", f"cannot read {path.name}: {exc.strerror or exc}")


# -- skills_list / skill_view ----------------------------------------------------------


def run_list(args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, _: bool) -> ToolResult:
    root = _root(rt)
    if isinstance(root, ToolResult):
        return root
    category = args.get("category")
    rows: list[dict[str, str]] = []
    if root.is_dir():
        for entry in sorted(root.iterdir(), key=lambda p: p.name):
            if entry.name.startswith(".") or _check_name(entry.name) is not None:
                continue
            skill = entry.resolve()
            md = skill / SKILL_FILE
            if not _inside(root, skill) or not md.is_file():
                continue
            text = _read_text(md)
            meta = _front_matter(text) if isinstance(text, str) else {}
            if category is not None and meta.get("category") != category:
                continue
            rows.append(
                {
                    "name": entry.name,
                    "description": meta.get("description", "").strip()[:300],
                    "category": meta.get("category", ""),
                }
            )
            if len(rows) >= MAX_SKILLS_LISTED:
                break
    if not rows:
        where = f" in category {category!r}" if category else ""
        return ToolResult("ok", f"(no skills{where})", data={"skills": []})
    lines = []
    for r in rows:
        cat = f" [{r['category']}]" if r["category"] else ""
        lines.append(f"{r['name']}{cat}: {r['description'] or '(no description)'}")
    return ToolResult("ok", "\n".join(lines), data={"skills": rows})


def _support_files(skill: Path) -> list[str]:
    found: list[str] = []
    for d in SUPPORT_DIRS:
        base = skill / d
        if not base.is_dir():
            continue
        for p in sorted(base.rglob("*")):
            rel = p.relative_to(skill).as_posix()
            if p.is_file() and check_support_path(rel) is None:
                found.append(rel)
    return found[:200]


def _read_skill_file(
    root: Path, skill: Path, name: Any, file_path: Any
) -> tuple[Path, str] | ToolResult:
    """A skill's file (its SKILL.md when ``file_path`` is None) and its text,
    or the refusal saying why it cannot be read."""
    target = _target(root, skill, file_path, allow_skill_md=True)
    if isinstance(target, ToolResult):
        return target
    if not target.is_file():
        return _err("skill-file-missing", f"skill {name!r} has no file {file_path!r}")
    text = _read_text(target)
    if isinstance(text, ToolResult):
        return text
    return target, text


def run_view(args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, _: bool) -> ToolResult:
    root = _root(rt)
    if isinstance(root, ToolResult):
        return root
    skill = _skill_dir(root, args.get("name"))
    if isinstance(skill, ToolResult):
        return skill
    if not (skill / SKILL_FILE).is_file():
        return _err("skill-unknown", f"no skill named {args.get('name')!r}; skills_list shows them")
    found = _read_skill_file(root, skill, args.get("name"), args.get("file_path"))
    if isinstance(found, ToolResult):
        return found
    target, text = found
    if target.name == SKILL_FILE and target.parent == skill:
        files = _support_files(skill)
        if files:
            text += "\n\n[support files: " + ", ".join(files) + "]"
    return ToolResult("ok", text, data={"skill": args["name"], "bytes": len(text.encode())})


# -- skill_manage ---------------------------------------------------------------------------


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text, prefix=".skill-", newline="")


def _too_large(text: Any, what: str) -> ToolResult | None:
    if not isinstance(text, str):
        return _err("skill-bad-content", f"{what} must be text", "invalid")
    if len(text.encode("utf-8")) > MAX_SKILL_BYTES:
        return _err("skill-file-too-large", f"{what} is larger than {MAX_SKILL_BYTES} bytes")
    return None


def run_manage(args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, _: bool) -> ToolResult:
    root = _root(rt)
    if isinstance(root, ToolResult):
        return root
    action = args.get("action")
    name = args.get("name")
    skill = _skill_dir(root, name)
    if isinstance(skill, ToolResult):
        return skill
    exists = (skill / SKILL_FILE).is_file()
    note = " It applies from your next call."
    if action in ("create", "update"):
        content = args.get("content")
        bad = _too_large(content, "content")
        if bad is not None:
            return bad
        if action == "create" and skill.exists():
            return _err("skill-exists", f"skill {name!r} already exists; use update or patch")
        if action == "update" and not exists:
            return _err("skill-unknown", f"no skill named {name!r} to update; use create")
        _write(skill / SKILL_FILE, str(content))
        verb = "created" if action == "create" else "updated"
        return ToolResult("ok", f"{verb} skill {name!r}." + note, data={"skill": name})
    if not exists:
        return _err("skill-unknown", f"no skill named {name!r}; skills_list shows them")
    if action == "patch":
        found = _read_skill_file(root, skill, name, args.get("file_path"))
        if isinstance(found, ToolResult):
            return found
        path, text = found
        old, new = args.get("old_string"), args.get("new_string")
        if not isinstance(old, str) or not old or not isinstance(new, str):
            return _err("skill-bad-patch", "patch needs old_string and new_string", "invalid")
        count = text.count(old)
        if count == 0:
            return _err("skill-patch-no-match", "old_string does not occur in the file")
        if count > 1 and not args.get("replace_all", False):
            return _err(
                "skill-patch-ambiguous",
                f"old_string occurs {count} times; make it unique or set replace_all",
            )
        updated = text.replace(old, new) if args.get("replace_all") else text.replace(old, new, 1)
        bad = _too_large(updated, "the patched file")
        if bad is not None:
            return bad
        _write(path, updated)
        rel = path.relative_to(skill).as_posix()
        return ToolResult(
            "ok",
            f"patched {rel} of skill {name!r} ({count if args.get('replace_all') else 1} "
            "replacement(s))." + note,
            data={"skill": name, "file": rel},
        )
    if action in ("write_file", "remove_file"):
        target = _target(root, skill, args.get("file_path"), allow_skill_md=False)
        if isinstance(target, ToolResult):
            return target
        rel = target.relative_to(skill).as_posix()
        if action == "write_file":
            content = args.get("file_content")
            bad = _too_large(content, "file_content")
            if bad is not None:
                return bad
            if target.is_dir():
                return _err("skill-path-is-directory", f"{rel} is a directory")
            _write(target, str(content))
            return ToolResult(
                "ok", f"wrote {rel} in skill {name!r}." + note, data={"skill": name, "file": rel}
            )
        if not target.is_file() or target.is_symlink():
            return _err("skill-file-missing", f"skill {name!r} has no file {rel!r}")
        target.unlink()
        return ToolResult(
            "ok", f"removed {rel} from skill {name!r}." + note, data={"skill": name, "file": rel}
        )
    if action == "delete":
        if (root / str(name)).is_symlink():
            return _err(
                "skill-outside-root", f"skill {name!r} is a link; it is not deleted", "denied"
            )
        shutil.rmtree(skill)
        return ToolResult("ok", f"deleted skill {name!r}." + note, data={"skill": name})
    return _err("skill-bad-action", f"unknown action {action!r}", "invalid")
