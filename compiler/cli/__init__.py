"""The ``charter`` command line.

Each verb lives in its own module with two functions, ``add_arguments(parser)``
and ``run(args) -> int``; a module that sets ``INTERMIXED = True`` has its
options read wherever they stand among its positionals (argparse's intermixed
parsing: ``charter check PLAN --agent A TOOL``). Only the chosen verb's module is imported, so
``charter validate`` and ``charter check`` never pay for the HTTP, MCP or
async stacks that ``charter run`` needs. Verb modules keep their top-level
imports to the standard library for the same reason.

Exit codes shared by every verb: 0 success, 1 findings or refusal, 2 usage or
I/O errors; verbs that answer allow/deny/ask use 3 for ask.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Iterator, Sequence

__all__ = ["VERBS", "build_parser", "entry", "main", "verb_parser"]

# verb -> (module, one-line help)
VERBS: dict[str, tuple[str, str]] = {
    "validate": ("charter.compiler.cli.validate", "Lint agent configuration (for CI)."),
    "compile": ("charter.compiler.cli.compile_cmd", "Compile a project into a plan."),
    "show": ("charter.compiler.cli.show", "Show a compiled plan's decisions."),
    "diff": ("charter.compiler.cli.diff", "Compare two plans, as a reviewer wants."),
    "rules": ("charter.compiler.cli.rules_cmd", "List every rule Charter checks."),
    "rule": ("charter.compiler.cli.rules_cmd", "Explain one rule: what, why, example, fix."),
    "check-url": ("charter.compiler.cli.check_url", "Decide whether a URL may be fetched."),
    "mcp": ("charter.compiler.cli.mcp_cmd", "Pin MCP servers' tools: charter mcp lock PROJECT."),
    "check": ("charter.compiler.cli.check", "Decide one tool call against a plan, no execution."),
    "check-path": (
        "charter.compiler.cli.check_path",
        "Decide whether a path is inside the workspace.",
    ),
    "hook": ("charter.compiler.cli.hook", "Answer another agent's permission hook from a plan."),
    "audit": ("charter.compiler.cli.audit_cmd", "Show an audit log as a table."),
    "run": ("charter.compiler.cli.run", "Run an agent from a plan or project with a model."),
    "check-shell": (
        "charter.compiler.cli.check_shell",
        "Judge a shell command as the guard would: allow, ask or deny.",
    ),
    "serve": ("charter.compiler.cli.serve", "Serve hook decisions over HTTP from a plan."),
    "schedule": (
        "charter.compiler.cli.schedule_cmd",
        "Fire an agent's stored schedules as unattended runs.",
    ),
    "init": (
        "charter.compiler.cli.init_cmd",
        "Set up Charter's hook for Claude Code or Gemini CLI.",
    ),
    "doctor": (
        "charter.compiler.cli.doctor",
        "Check that a client's Charter hook loads and answers.",
    ),
    "completion": (
        "charter.compiler.cli.completion",
        "Print a shell completion script: charter completion bash|zsh|fish.",
    ),
    "sandbox": (
        "charter.compiler.cli.sandbox_cmd",
        "Run one command inside a stage's sandbox: charter sandbox PLAN --agent A -- CMD.",
    ),
}


class _VersionAction(argparse.Action):
    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kw: object) -> None:
        from charter.runtime import VERSION

        print(f"charter {VERSION}")
        parser.exit()


class _Parser(argparse.ArgumentParser):
    """Usage errors return exit code 2 through :class:`SystemExit` as usual;
    ``main`` turns that into a return value."""


def _positions(argv: Sequence[str]) -> Iterator[tuple[int, str]]:
    """Each token of ``argv`` with its index, but the top-level options that
    take a value (``--color WHEN``) and their values."""
    skip = False
    for at, token in enumerate(argv):
        if skip:
            skip = False
        elif token == "--color":
            skip = True
        else:
            yield at, token


def _words(argv: Sequence[str]) -> list[str]:
    """``argv`` without the top-level options' values (``--color WHEN``)."""
    return [token for _, token in _positions(argv)]


def _verb_index(argv: Sequence[str]) -> int | None:
    """Where the verb stands in ``argv`` (top-level options and their
    values before it), or None when the first word is no verb."""
    for at, token in _positions(argv):
        if token in VERBS:
            return at
        if not token.startswith("-"):
            return None
    return None


def _chosen_verb(argv: Sequence[str]) -> str | None:
    at = _verb_index(argv)
    return None if at is None else argv[at]


def _unknown_verb(argv: Sequence[str]) -> str:
    """The error for a first word that is no verb, naming the verbs it is
    closest to (argparse would list all nineteen), or ""."""
    first = next((t for t in _words(argv) if not t.startswith("-")), None)
    if first is None or first in VERBS:
        return ""
    import difflib

    close = difflib.get_close_matches(first, list(VERBS), n=2, cutoff=0.6)
    if close:
        return f"{first!r} is not a verb; did you mean {' or '.join(map(repr, close))}?"
    return f"{first!r} is not a verb; the verbs are {', '.join(VERBS)} (charter --help)"


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    parser = _Parser(prog="charter", description="Policy compiler and runtime for agent tools.")
    parser.add_argument("--version", action=_VersionAction, nargs=0, help="print the version")
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour in human output: on a terminal (auto, honouring NO_COLOR), always, never",
    )
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    chosen = _chosen_verb(argv)
    for name, (module_name, help_text) in VERBS.items():
        # With a verb on the command line, the other verbs' sub-parsers would
        # never be consulted; building all of them costs a few ms per start.
        if chosen is not None and name != chosen:
            continue
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == chosen:
            module = importlib.import_module(module_name)
            module.add_arguments(p)
            p.set_defaults(_module=module, _parser=p)
    return parser


def _sub_parser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[name]  # type: ignore[no-any-return]
    from charter.compiler.errors import CompilerBug

    raise CompilerBug(f"verb {name!r} has no sub-parser")  # pragma: no cover


def verb_parser(name: str) -> argparse.ArgumentParser:
    """The full parser of one verb (its options, for help and completion)."""
    return _sub_parser(build_parser([name]), name)


def _parse(
    parser: argparse.ArgumentParser, argv: list[str]
) -> tuple[argparse.Namespace, list[str]]:
    """``parser.parse_known_args(argv)``, except that a verb whose module
    sets ``INTERMIXED`` reads its own part with argparse's intermixed parsing
    (options first, then the positionals), which a sub-parser is never given:
    plain parsing fills every optional positional in the first run of them,
    so ``TOOL`` after ``--agent`` would be refused."""
    at = _verb_index(argv)
    if at is None:
        return parser.parse_known_args(argv)
    verb = argv[at]
    if not getattr(importlib.import_module(VERBS[verb][0]), "INTERMIXED", False):
        return parser.parse_known_args(argv)
    args, extra = parser.parse_known_args(argv[:at])
    # As argparse's sub-parser action does: the verb's namespace is parsed
    # on its own and copied over the top-level one.
    own, more = _sub_parser(parser, verb).parse_known_intermixed_args(argv[at + 1 :])
    args.verb = verb
    for key, value in vars(own).items():
        setattr(args, key, value)
    return args, [*extra, *more]


# Verbs that only read files, print, and (check, hook) append to the audit log
# through a raw descriptor that is fsync-ed before the verdict is printed. Once
# their output is flushed nothing is left to finish, so the console script
# ends them with os._exit and skips tearing down every module and object the
# interpreter holds. For a cold `charter validate` that teardown is what
# stands between issue 17's target and the figure: within 2.0x of a
# one-model pydantic program with os._exit, over it without (see
# bench/validate_startup.py and docs/ci.md for the figures).
_FAST_EXIT_VERBS = frozenset(
    {"validate", "rules", "rule", "check", "check-shell", "check-url", "check-path", "hook"}
)
# `charter run` ends the same way for another reason: when it was interrupted
# it may leave a worker thread behind (a model request it abandoned, a tool
# that ignored the cancel event), and the interpreter's shutdown would wait
# for that thread, holding the process open for minutes. Its records are
# closed and synced before run() returns; nothing else is left to finish.
_EXIT_AT_ONCE_VERBS = _FAST_EXIT_VERBS | {"run"}


def _disable_pydantic_plugins() -> None:
    # Charter uses no pydantic plugins, and discovering them reads every
    # installed package's entry points. A plugin would also see every value
    # Charter validates, credentials included.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")


def entry() -> None:
    """The console script (and ``python -m charter.compiler``)."""
    _disable_pydantic_plugins()
    argv = sys.argv[1:]
    try:
        code = main(argv)
    except KeyboardInterrupt:
        # Ctrl-C between main's own handling and here: still no traceback.
        code = 130
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        # The reader went away (`charter rules | head -1`); what was written
        # is all it wanted. Point stdout at /dev/null so the interpreter's
        # own flush at exit does not report the same broken pipe again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    if _chosen_verb(argv) in _EXIT_AT_ONCE_VERBS:
        os._exit(code)
    sys.exit(code)


@contextlib.contextmanager
def _colour(choice: str) -> Iterator[None]:
    """``--color``, as the conventions every renderer already reads
    (NO_COLOR, FORCE_COLOR: our own and rich's), for this command only."""
    if choice == "auto":
        yield
        return
    saved = {k: os.environ.get(k) for k in ("NO_COLOR", "FORCE_COLOR")}
    os.environ.pop("NO_COLOR" if choice == "always" else "FORCE_COLOR", None)
    os.environ["FORCE_COLOR" if choice == "always" else "NO_COLOR"] = "1"
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def main(argv: Sequence[str] | None = None) -> int:
    _disable_pydantic_plugins()
    args_list = list(sys.argv[1:] if argv is None else argv)
    # A verb that runs a command (charter sandbox ... -- CMD) takes everything
    # after the first "--" as that command, untouched by option parsing.
    tail: list[str] | None = None
    if _chosen_verb(args_list) == "sandbox" and "--" in args_list:
        cut = args_list.index("--")
        args_list, tail = args_list[:cut], args_list[cut + 1 :]
    if _chosen_verb(args_list) == "hook":
        # The hook's plan was an option (--plan) before it was the positional
        # every verb takes; settings files written then still say so.
        from charter.compiler.cli.hook import plan_operand

        args_list = plan_operand(args_list)
    unknown = _unknown_verb(args_list)
    if unknown:
        sys.stderr.write(
            f"usage: charter [-h] [--version] [--color WHEN] VERB ...\ncharter: error: {unknown}\n"
        )
        return 2
    parser = build_parser(args_list)
    try:
        args, extra = _parse(parser, args_list)
        if extra:
            # An option the verb does not know: that verb's usage, not the
            # top-level one, which lists no option of any verb.
            owner: argparse.ArgumentParser = getattr(args, "_parser", None) or parser
            owner.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    if tail is not None:
        args.command = tail
    module = getattr(args, "_module", None)
    if module is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        with _colour(args.color):
            return int(module.run(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
