"""What each import inside a function of the charter package saves.

Usage::

    python bench/lazy_imports.py [--repeats N] [--write] [--hoist] [--only PREFIX]

Every import statement inside a function (read from the source by
``tests/_support/imports.py``, the reader the architecture tests use) is
grouped by the module holding it and the module it imports. For each pair the
figure is what moving the import to module level would add to a cold import
of the importing module: a fresh interpreter imports the importer, then forks
once per pair and repetition, and each child times the pair's import
statements and counts the modules they load that were not loaded yet (the
smallest time of the repetitions is kept; forking gives every child the same
state, and the count is exact whatever the machine's load).

Each pair gets a reason, the first word of which is its kind:

``free``
    the statements load no module the importer has not loaded already, or
    only standard-library modules under ``CHEAP_MS`` (and the importer is
    not on the validate path): hoisting it costs nothing measurable
    (``--hoist`` moves these to module level);
``cost``
    it loads modules; the figure is their time (", on the validate path"
    when ``charter validate`` loads the importer but not those modules);
``cycle``
    the target imports the importer at module level, directly or through
    others: hoisting would close an import cycle (the path is given);
``block``
    the statement is all its block holds (``try: import x``): taking it
    out would leave the block empty;
``failed``
    the import fails in this environment (an optional dependency);
``name``
    its name is bound otherwise in the module or in the function (hoisting
    would change what the name means);
``cli``
    it is in ``compiler/cli/``, whose verbs are being moved out; left as is.

``--write`` writes the kept pairs (every kind but ``free``) to
``tests/architecture/lazy_imports.txt``, the list the architecture tests hold
the source to; ``--hoist`` first moves the free pairs to module level and
then writes the list. Run ``ruff check --fix`` and ``ruff format`` on the
files it changed afterwards (it leaves import order to ruff).
"""

from __future__ import annotations

import argparse
import ast
import os
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from _support.imports import (  # noqa: E402 - the tests' reader, found through the path above
    MODULES,
    FunctionImport,
    function_imports,
    module_graph,
)

GOLDEN = REPO / "tests" / "architecture" / "lazy_imports.txt"
CLI = "charter.compiler.cli"
VALIDATED = "blueprints/coder"  # the project bench/validate_startup.py times
# Below this, an import that loads only standard-library modules is hoisted
# (unless the importer is on the validate path): no more than a single
# interpreter start-up varies by.
CHEAP_MS = 0.5

# The child: imports the importer, then forks once per (pair, repetition);
# each fork runs the pair's statements and reports the time and the modules
# they loaded. It imports nothing itself beyond what the interpreter has
# loaded before any user code, so it cannot preload what it measures.
_DRIVER = r"""
import os, sys, time
importer, repeats, groups = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
__import__(importer)
base = set(sys.modules)
for i, group in enumerate(groups):
    for _ in range(repeats):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                code = compile(group, "<hoisted>", "exec")
                t = time.perf_counter()
                exec(code, {})
                ms = (time.perf_counter() - t) * 1000
                new = sorted(set(sys.modules) - base)
                line = f"{i}\t{ms:.4f}\t{len(new)}\t{','.join(new)}\n"
            except BaseException as exc:
                line = f"{i}\tnan\t-1\t{type(exc).__name__}: {exc}\n"
            os.write(w, line.replace("\n", " ").rstrip().encode() + b"\n")
            os._exit(0)
        os.close(w)
        chunks = []
        while True:
            chunk = os.read(r, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(r)
        os.waitpid(pid, 0)
        sys.stdout.write(b"".join(chunks).decode())
sys.stdout.flush()
"""


@dataclass
class Pair:
    importer: str
    target: str
    imports: list[FunctionImport]
    ms: float = 0.0
    loaded: int = 0  # modules the statements load; -1 when they fail
    modules: str = ""  # those modules, or the error
    kind: str = ""
    why: str = ""

    @property
    def statements(self) -> list[str]:
        return sorted({i.statement for i in self.imports})


def pairs() -> list[Pair]:
    grouped: dict[tuple[str, str], list[FunctionImport]] = defaultdict(list)
    for module in MODULES:
        for found in function_imports(module):
            grouped[(found.importer, found.target)].append(found)
    return [Pair(i, t, found) for (i, t), found in sorted(grouped.items())]


def measure(found: list[Pair], repeats: int) -> None:
    by_importer: dict[str, list[Pair]] = defaultdict(list)
    for pair in found:
        by_importer[pair.importer].append(pair)
    env = {**os.environ, "PYDANTIC_DISABLE_PLUGINS": "__all__"}
    for n, (importer, mine) in enumerate(sorted(by_importer.items()), 1):
        print(f"\r[{n}/{len(by_importer)}] {importer:<70}", end="", file=sys.stderr, flush=True)
        if importer.endswith(".__main__"):  # runs its program when imported
            for pair in mine:
                pair.loaded, pair.modules = -1, "a __main__ module is not imported"
            continue
        groups = ["\n".join(p.statements) for p in mine]
        out = subprocess.run(
            [sys.executable, "-c", _DRIVER, importer, str(repeats), *groups],
            capture_output=True,
            text=True,
            cwd=REPO,
            env=env,
            check=False,
        )
        if out.returncode != 0:
            for pair in mine:
                pair.loaded, pair.modules = -1, f"importing {importer} failed"
            continue
        best: dict[int, tuple[float, int, str]] = {}
        for line in out.stdout.splitlines():
            index, ms, loaded, modules = (line.split("\t") + ["", "", "", ""])[:4]
            i, t = int(index), float(ms)
            if i not in best or not t >= best[i][0]:
                best[i] = (t, int(loaded), modules)
        for i, pair in enumerate(mine):
            pair.ms, pair.loaded, pair.modules = best.get(i, (float("nan"), -1, "no answer"))
    print(file=sys.stderr)


def _reaches(graph: dict[str, set[str]], start: str, goal: str) -> list[str] | None:
    """A path of module-level imports from ``start`` to ``goal``, if any."""
    came: dict[str, str | None] = {start: None}
    queue = [start]
    while queue:
        node = queue.pop(0)
        if node == goal:
            path = [node]
            while (prev := came[path[-1]]) is not None:
                path.append(prev)
            return path[::-1]
        for nxt in sorted(graph.get(node, ())):
            if nxt not in came:
                came[nxt] = node
                queue.append(nxt)
    return None


def _tree(module: str) -> ast.Module:
    return ast.parse(MODULES[module].read_text(encoding="utf-8"))


def _statement(node: ast.Import | ast.ImportFrom, alias: ast.alias, package: str) -> str:
    """The absolute form of one name's import, as FunctionImport.statement."""
    tail = f" as {alias.asname}" if alias.asname else ""
    if isinstance(node, ast.Import):
        return f"import {alias.name}{tail}"
    module = node.module or ""
    if node.level:
        parts = package.split(".")
        parts = parts[: len(parts) - (node.level - 1)]
        module = ".".join([*parts, *([node.module] if node.module else [])])
    return f"from {module} import {alias.name}{tail}"


def _package(module: str) -> str:
    return module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]


def _module_names(tree: ast.Module, module: str) -> dict[str, set[str]]:
    """Names bound at module level (under ``if``/``try`` too, and under
    ``if TYPE_CHECKING``, which the type checker reads): by an import (its
    absolute statement) or by anything else ('')."""
    bound: dict[str, set[str]] = defaultdict(set)
    package = _package(module)
    for top in tree.body:
        for node in ast.walk(top) if isinstance(top, (ast.If, ast.Try)) else [top]:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for a in node.names:
                    name = a.asname or (
                        a.name if node.__class__ is ast.ImportFrom else a.name.split(".")[0]
                    )
                    bound[name].add(_statement(node, a, package))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound[node.name].add("")
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                bound[node.id].add("")
    return bound


def _function_binds(tree: ast.Module, line: int, name: str) -> bool:
    """Whether the top-level function or class holding ``line`` binds
    ``name`` by anything but an import (an assignment, a parameter, a loop
    or ``with`` target, a nested def)."""
    for top in tree.body:
        if not (top.lineno <= line <= (top.end_lineno or top.lineno)):
            continue
        for node in ast.walk(top):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
                if node.id == name:
                    return True
            elif isinstance(node, ast.arg) and node.arg == name:
                return True
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if node.name == name and node is not top:
                    return True
            elif isinstance(node, ast.ExceptHandler) and node.name == name:
                return True
            elif isinstance(node, ast.Global | ast.Nonlocal) and name in node.names:
                return True
    return False


def validate_path() -> set[str]:
    """The modules a ``charter validate`` of a bundled blueprint loads."""
    code = (
        "import contextlib, io, os, sys\n"
        "os.environ['PYDANTIC_DISABLE_PLUGINS'] = '__all__'\n"
        "from charter.compiler.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main(['validate', '--format', 'concise', {VALIDATED!r}])\n"
        "print('\\n'.join(sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    )
    return set(out.stdout.split())


def _blocks(tree: ast.Module) -> dict[int, list[ast.stmt]]:
    """The statement list holding each import statement, by its line."""
    found: dict[int, list[ast.stmt]] = {}
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                for stmt in block:
                    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                        found[stmt.lineno] = block
    return found


def _stdlib(modules: list[str]) -> bool:
    return all(m.split(".")[0] in sys.stdlib_module_names or m.startswith("_") for m in modules)


def classify(found: list[Pair], validating: set[str]) -> None:
    """Give each pair its kind and reason; the free ones are hoisted in this
    order, each only if it closes no cycle with those before it."""
    graph = module_graph()
    trees = {m: _tree(m) for m in {p.importer for p in found}}
    hoisted_names: dict[str, dict[str, str]] = defaultdict(dict)  # importer -> name -> statement
    for pair in found:
        pair.why = ""
        loaded = [m for m in pair.modules.split(",") if m] if pair.loaded > 0 else []
        on_path = pair.importer in validating and not set(loaded) <= validating
        cheap = _stdlib(loaded) and pair.ms < CHEAP_MS and not on_path
        if pair.loaded < 0:
            pair.kind, pair.why = "failed", pair.modules
        elif pair.importer.startswith(CLI + ".") or pair.importer == CLI:
            pair.kind = "cli"
            pair.why = "free to hoist" if not loaded else _loads(pair)
        elif loaded and not cheap:
            pair.kind = "cost"
            pair.why = _loads(pair) + (", on the validate path" if on_path else "")
        else:
            pair.kind = "free"
        if pair.kind == "free" and pair.target in MODULES:
            path = _reaches(graph, pair.target, pair.importer)
            if path is not None:
                pair.kind, pair.why = "cycle", " -> ".join([pair.importer, *path])
        if pair.kind != "free":
            continue
        tree = trees[pair.importer]
        blocks = _blocks(tree)
        if any(
            all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in blocks[i.line])
            for i in pair.imports
        ):
            pair.kind = "block"
            pair.why = "the only statement of its block (an optional or platform import)"
            continue
        names = _module_names(tree, pair.importer)
        for imp in pair.imports:
            key = imp.statement
            clash = (
                not names.get(imp.bound, set()) <= {key}
                or hoisted_names[pair.importer].get(imp.bound, key) != key
                or _function_binds(tree, imp.line, imp.bound)
            )
            if clash:
                pair.kind, pair.why = "name", f"'{imp.bound}' is bound otherwise in the module"
                break
        if pair.kind == "free":
            for imp in pair.imports:
                hoisted_names[pair.importer][imp.bound] = imp.statement
            if pair.target in MODULES:
                graph[pair.importer].add(pair.target)


def _loads(pair: Pair) -> str:
    mods = [m for m in pair.modules.split(",") if m]
    tops = sorted({m.split(".")[0] for m in mods})
    std = all(t in sys.stdlib_module_names or t.startswith("_") for t in tops)
    shown = ", ".join(sorted(mods, key=len)[:3])
    more = f" and {len(mods) - 3} more" if len(mods) > 3 else ""
    return f"loads {len(mods)} {'stdlib ' if std else ''}modules ({shown}{more})"


# -------------------------------------------------------------------- hoisting


def hoist(found: list[Pair]) -> list[Path]:
    """Move the free pairs' imports to module level; the files changed."""
    by_importer: dict[str, list[FunctionImport]] = defaultdict(list)
    for pair in found:
        if pair.kind == "free":
            by_importer[pair.importer].extend(pair.imports)
    changed = []
    for importer, imports in sorted(by_importer.items()):
        path = MODULES[importer]
        source = path.read_text(encoding="utf-8")
        edited = _hoisted(source, importer, imports)
        try:
            ast.parse(edited)
        except SyntaxError as exc:
            print(f"{path}: not hoisted ({exc})", file=sys.stderr)
            continue
        path.write_text(edited, encoding="utf-8")
        changed.append(path)
    return changed


def _type_checking(node: ast.stmt) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def _blank(lines: list[str], index: int) -> bool:
    return 0 <= index < len(lines) and not lines[index].strip()


def _opens_block(lines: list[str], index: int) -> bool:
    """Whether line ``index`` starts a block's body: a header (``def``,
    ``if``) or the end of a docstring."""
    if not 0 <= index < len(lines):
        return False
    text = lines[index].rstrip()
    return text.endswith((":", '"' * 3, "'" * 3))


def _hoisted(source: str, importer: str, imports: list[FunctionImport]) -> str:
    """``source`` with ``imports`` moved to module level: each leaves its
    function; the module gains its statement unless it has it already, and
    loses the same statement under ``if TYPE_CHECKING`` (now redundant)."""
    tree = ast.parse(source)
    package = _package(importer)
    lines = source.splitlines(keepends=True)
    moving = {(i.line, i.statement) for i in imports}
    added = {i.statement for i in imports}
    present = {
        _statement(n, a, package)
        for n in tree.body
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in n.names
    }
    edits: list[tuple[int, int, str]] = []  # (first line, last line, replacement)

    def rewrite(node: ast.Import | ast.ImportFrom, drop: set[str]) -> bool:
        """Drop the names whose statement is in ``drop``; True when none is left."""
        keep = [a for a in node.names if _statement(node, a, package) not in drop]
        if len(keep) == len(node.names):
            return False
        indent = lines[node.lineno - 1][: node.col_offset]
        text = ""
        if keep:
            names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in keep)
            if isinstance(node, ast.Import):
                text = f"{indent}import {names}\n"
            else:
                text = f"{indent}from {'.' * node.level}{node.module or ''} import {names}\n"
        end = node.end_lineno or node.lineno
        if not keep and _opens_block(lines, node.lineno - 2) and _blank(lines, end):
            end += 1  # the blank line that set the imports apart goes with them
        edits.append((node.lineno, end, text))
        return not keep

    for top in tree.body:
        if _type_checking(top):
            assert isinstance(top, ast.If)
            before = len(edits)
            emptied = [
                rewrite(n, added) if isinstance(n, (ast.Import, ast.ImportFrom)) else False
                for n in top.body
            ]
            if all(emptied) and not top.orelse:  # the whole block goes
                del edits[before:]
                edits.append((top.lineno, top.end_lineno or top.lineno, ""))
            continue
        for node in ast.walk(top):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and node is not top:
                rewrite(node, {st for line, st in moving if line == node.lineno})
    # The module-level statements go after the last module-level import.
    last = max(
        (
            n.end_lineno or n.lineno
            for n in tree.body
            if isinstance(n, (ast.Import, ast.ImportFrom))
        ),
        default=0,
    )
    if last == 0 and tree.body:  # only a docstring before the code: after it
        first = tree.body[0]
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            last = first.end_lineno or first.lineno
    edits.append((last + 1, last, "".join(f"{st}\n" for st in sorted(added - present))))
    for first_line, end_line, text in sorted(edits, reverse=True):
        lines[first_line - 1 : end_line] = [text] if text else []
    return "".join(lines)


# ---------------------------------------------------------------------- output


def write_golden(found: list[Pair]) -> None:
    kept = [p for p in found if p.kind != "free"]
    width = max(len(p.importer) for p in kept)
    twidth = max(len(p.target) for p in kept)
    head = (
        "# Imports kept inside functions: importer, imported module, what hoisting it\n"
        "# would add to a cold import of the importer (ms, measured by\n"
        "# bench/lazy_imports.py), and why it stays (see that file for the kinds).\n"
        "# A new import inside a function needs a line here; regenerate with\n"
        "# `python bench/lazy_imports.py --write`.\n"
    )
    body = "".join(
        f"{p.importer:<{width}}  {p.target:<{twidth}}  {_figure(p):>7}  {p.kind}: {p.why}\n"
        for p in kept
    )
    GOLDEN.write_text(head + body, encoding="utf-8")


def _figure(pair: Pair) -> str:
    return "-" if pair.loaded < 0 or pair.ms != pair.ms else f"{pair.ms:.2f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--write", action="store_true", help="write " + str(GOLDEN.relative_to(REPO)))
    ap.add_argument("--hoist", action="store_true", help="move the free imports to module level")
    ap.add_argument("--only", default="", help="measure only importers starting with this")
    args = ap.parse_args(argv)
    found = [p for p in pairs() if p.importer.startswith(args.only)]
    measure(found, args.repeats)
    classify(found, validate_path())
    for pair in sorted(found, key=lambda p: (p.kind, -p.ms if p.ms == p.ms else 0)):
        print(
            f"{_figure(pair):>8} ms  {pair.kind:<11} {pair.importer} -> {pair.target}  {pair.why}"
        )
    kinds = defaultdict(int)
    for pair in found:
        kinds[pair.kind] += 1
    names = sum(len(p.imports) for p in found)
    print(
        f"{len(found)} pairs ({names} imported names): "
        + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
    )
    if args.hoist:
        changed = hoist(found)
        print(f"hoisted into {len(changed)} files")
    if args.write or args.hoist:
        if args.only:
            print("--only measures part of the package; the list was not written", file=sys.stderr)
            return 1
        write_golden(found)
        print(f"wrote {GOLDEN.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
