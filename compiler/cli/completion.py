"""``charter completion bash|zsh|fish``: a shell completion script on stdout.

The script is generated from the verbs and their options as this Charter
defines them (``VERBS`` and each verb's parser), so it never lists an option
that does not exist. It completes verbs, each verb's options, the values of
options that take a fixed set of choices (``--format``), a verb's fixed first
argument (``hook claude-code``), and file names everywhere else.

Install it the usual way for each shell::

    bash:  eval "$(charter completion bash)"          (e.g. in ~/.bashrc)
    zsh:   charter completion zsh > "${fpath[1]}/_charter"
    fish:  charter completion fish > ~/.config/fish/completions/charter.fish

Building every verb's parser imports every verb module, which only this verb
does.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["SHELLS", "Option", "Verb", "add_arguments", "describe", "render", "run"]

SHELLS = ("bash", "zsh", "fish")


@dataclass(frozen=True, slots=True)
class Option:
    names: tuple[str, ...]  # its long spellings (--quiet)
    help: str
    takes_value: bool
    choices: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Verb:
    name: str
    help: str
    options: tuple[Option, ...]
    first_choices: tuple[str, ...] = ()  # a fixed first positional (hook's agent kind)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("shell", choices=SHELLS, help="the shell to complete for")


def _help(text: str | None) -> str:
    text = " ".join((text or "").split())
    return text.replace("%(default)s", "").replace("%%", "%")


def describe() -> list[Verb]:
    """Every verb with its options, read from the verbs' own parsers."""
    from charter.compiler.cli import VERBS, verb_parser
    from charter.compiler.cli._options import is_hidden

    verbs: list[Verb] = []
    for name, (_module, help_text) in VERBS.items():
        parser = verb_parser(name)
        options: list[Option] = []
        first: tuple[str, ...] = ()
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction) or is_hidden(action):
                continue  # an old spelling kept as a hidden alias is not offered
            choices = tuple(str(c) for c in action.choices or ()) if action.choices else ()
            if action.option_strings:
                names = tuple(s for s in action.option_strings if s.startswith("--"))
                if names:
                    options.append(Option(names, _help(action.help), action.nargs != 0, choices))
            elif not first and choices and not isinstance(action, argparse._SubParsersAction):
                first = choices
            elif not first and isinstance(action, argparse._SubParsersAction):
                first = tuple(action.choices)
        verbs.append(Verb(name, help_text, tuple(options), first))
    return verbs


def _words(items: list[str]) -> str:
    return " ".join(items)


def _bash(verbs: list[Verb]) -> str:
    lines = [
        '# charter completion for bash. Load it with:  eval "$(charter completion bash)"',
        "_charter() {",
        "    local cur prev verb i",
        '    cur="${COMP_WORDS[COMP_CWORD]}"',
        '    prev="${COMP_WORDS[COMP_CWORD-1]}"',
        '    verb=""',
        "    for ((i = 1; i < COMP_CWORD; i++)); do",
        '        case "${COMP_WORDS[i]}" in',
        "            -*) ;;",
        '            *) verb="${COMP_WORDS[i]}"; break ;;',
        "        esac",
        "    done",
        '    if [[ -z "$verb" ]]; then',
        f'        COMPREPLY=($(compgen -W "{_words([v.name for v in verbs])} --help --version"'
        ' -- "$cur"))',
        "        return",
        "    fi",
        '    local opts="" values="" takes="" first=""',
        '    case "$verb" in',
    ]
    for verb in verbs:
        opts = [n for o in verb.options for n in o.names] + ["--help"]
        takes = [n for o in verb.options if o.takes_value for n in o.names]
        lines.append(f"        {verb.name})")
        lines.append(f'            opts="{_words(opts)}"')
        lines.append(f'            takes=" {_words(takes)} "')
        if verb.first_choices:
            lines.append(f'            first="{_words(list(verb.first_choices))}"')
        cases = [o for o in verb.options if o.choices]
        if cases:
            lines.append('            case "$prev" in')
            for o in cases:
                lines.append(
                    f'                {"|".join(o.names)}) values="{_words(list(o.choices))}" ;;'
                )
            lines.append("            esac")
        lines.append("            ;;")
    lines += [
        "    esac",
        '    if [[ -n "$values" ]]; then',
        '        COMPREPLY=($(compgen -W "$values" -- "$cur"))',
        '    elif [[ "$takes" == *" $prev "* ]]; then',
        '        COMPREPLY=($(compgen -f -- "$cur"))',
        '    elif [[ "$cur" == -* ]]; then',
        '        COMPREPLY=($(compgen -W "$opts" -- "$cur"))',
        '    elif [[ -n "$first" && "$prev" == "$verb" ]]; then',
        '        COMPREPLY=($(compgen -W "$first" -- "$cur"))',
        "    else",
        '        COMPREPLY=($(compgen -f -- "$cur"))',
        "    fi",
        "}",
        "complete -o default -o filenames -F _charter charter",
    ]
    return "\n".join(lines) + "\n"


_ZSH_UNSAFE = re.compile(r"[\[\]:\\'\"`$]")


def _zsh_text(text: str) -> str:
    return _ZSH_UNSAFE.sub(" ", text).strip()


def _zsh(verbs: list[Verb]) -> str:
    lines = [
        "#compdef charter",
        "# charter completion for zsh. Put it on $fpath as _charter, or source it.",
        "",
        "_charter() {",
        "  local curcontext=$curcontext state line",
        "  local -a verbs",
        "  verbs=(",
    ]
    for verb in verbs:
        lines.append(f"    '{verb.name}:{_zsh_text(verb.help)}'")
    lines += [
        "  )",
        "  _arguments -C \\",
        "    '(- *)--help[show help]' \\",
        "    '(- *)--version[print the version]' \\",
        "    '1: :->verb' \\",
        "    '*:: :->args'",
        "  case $state in",
        "    verb) _describe -t verbs 'charter verb' verbs ;;",
        "    args)",
        "      case $line[1] in",
    ]
    for verb in verbs:
        specs = ["'--help[show help]'"]
        for o in verb.options:
            value = ""
            if o.takes_value:
                value = f": :({' '.join(o.choices)})" if o.choices else ": :_files"
            for name in o.names:
                specs.append(f"'{name}[{_zsh_text(o.help)}]{value}'")
        if verb.first_choices:
            specs.append(f"'1: :({' '.join(verb.first_choices)})'")
        specs.append("'*: :_files'")
        lines.append(f"        {verb.name})")
        lines.append("          _arguments \\")
        for n, spec in enumerate(specs):
            tail = " \\" if n < len(specs) - 1 else ""
            lines.append(f"            {spec}{tail}")
        lines.append("          ;;")
    lines += [
        "      esac",
        "      ;;",
        "  esac",
        "}",
        "",
        'if [[ "${funcstack[1]}" == _charter ]]; then',
        '  _charter "$@"',
        "else",
        "  compdef _charter charter",
        "fi",
    ]
    return "\n".join(lines) + "\n"


def _fish_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")


def _fish(verbs: list[Verb]) -> str:
    names = _words([v.name for v in verbs])
    lines = [
        "# charter completion for fish. Save it as ~/.config/fish/completions/charter.fish",
        "complete -c charter -f",
        "complete -c charter -n '__fish_use_subcommand' -l version -d 'print the version'",
    ]
    for verb in verbs:
        lines.append(
            f"complete -c charter -n '__fish_use_subcommand' -a {verb.name} "
            f"-d '{_fish_text(verb.help)}'"
        )
    for verb in verbs:
        when = f"-n '__fish_seen_subcommand_from {verb.name}'"
        if verb.first_choices:
            # File names only once the fixed first argument was given.
            chosen = " ".join(verb.first_choices)
            lines.append(
                f"complete -c charter -n '__fish_seen_subcommand_from {verb.name}; and "
                f"__fish_seen_subcommand_from {chosen}' -F"
            )
        else:
            lines.append(f"complete -c charter {when} -F")  # file names for arguments
        for o in verb.options:
            for name in o.names:
                spec = f"complete -c charter {when} -l {name[2:]} -d '{_fish_text(o.help)}'"
                if o.choices:
                    spec += f" -x -a '{' '.join(o.choices)}'"
                elif o.takes_value:
                    spec += " -r -F"
                lines.append(spec)
        if verb.first_choices:
            lines.append(
                f"complete -c charter -n '__fish_seen_subcommand_from {verb.name}; and "
                f"not __fish_seen_subcommand_from {' '.join(verb.first_choices)}' "
                f"-x -a '{' '.join(verb.first_choices)}'"
            )
    lines.append(f"# verbs: {names}")
    return "\n".join(lines) + "\n"


_SCRIPTS: dict[str, Callable[[list[Verb]], str]] = {"bash": _bash, "zsh": _zsh, "fish": _fish}


def render(shell: str) -> str:
    script = _SCRIPTS.get(shell)
    if script is None:
        from charter.compiler.errors import UnknownChoice

        raise UnknownChoice(f"no completion for {shell!r}; choose one of {', '.join(SHELLS)}")
    return script(describe())


def run(args: argparse.Namespace) -> int:
    sys.stdout.write(render(args.shell))
    return 0
