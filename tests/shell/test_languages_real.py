"""The guard's readings of program languages, checked against the real
programs installed on this machine (each test skips, saying so, where the
program is missing).

The property is one-directional, and it is the one a user relies on: when
the guard allows ``sed SCRIPT f`` or ``awk PROGRAM f``, running it really
does nothing but read ``f`` and print. Each generated script is run in a
scratch directory holding a credential file; it may try to execute
(``e touch E``, ``system(...)``), write (``w W``, ``print > "W"``) or read
the credential (``r .env``, ``ENVIRON``). An allowed script that leaves a new
file behind or prints the credential is a guard bug.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from charter.runtime.shell import ShellPolicy, evaluate
from charter.runtime.shell.programs.find import _NO_ARG, _PATH_ARG, _TEXT_ARG, _WRITES

SECRET = "TOKEN-5f1e"
SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def _gnu_sed() -> str | None:
    sed = shutil.which("sed")
    if sed is None:
        return None
    out = subprocess.run([sed, "--version"], capture_output=True, text=True, check=False).stdout
    return sed if "GNU sed" in out else None


SED = _gnu_sed()
AWK = shutil.which("awk")
FIND = shutil.which("find")


try:
    import resource
except ImportError:  # not POSIX: the programs these tests need are not there either
    resource = None  # type: ignore[assignment]


def _limits() -> None:
    # an allowed program may loop forever printing: cap what it can write
    # (SIGXFSZ ends it) and its CPU time
    if resource is None:
        return
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
    resource.setrlimit(resource.RLIMIT_CPU, (5, 5))


def _run_in_scratch(
    tmp: Path, argv: list[str], env: dict[str, str] | None = None
) -> tuple[set[str], str]:
    """Run ``argv`` in a fresh scratch directory; (new file names, output)."""
    work = tmp / "w"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir()
    (work / "f").write_text("x1\nab\n")
    (work / ".env").write_text(SECRET + "\n")
    before = set(os.listdir(work))
    out_path = tmp / "out.txt"
    with out_path.open("wb") as out_file:
        try:
            subprocess.run(
                argv,
                cwd=work,
                stdout=out_file,
                stderr=subprocess.STDOUT,
                timeout=10,
                stdin=subprocess.DEVNULL,
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", **(env or {})},
                preexec_fn=_limits,
                check=False,
            )
        except subprocess.TimeoutExpired:
            pass
    with out_path.open("rb") as f:
        out = f.read(1 << 20).decode("utf-8", "replace")
    return set(os.listdir(work)) - before, out


def _allowed(tmp: Path, words: list[str]) -> bool:
    ws = tmp / "w"
    ws.mkdir(exist_ok=True)
    command = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
    return evaluate(command, cwd=ws, workspace=ws, policy=ShellPolicy()).decision == "allow"


# --- sed ---------------------------------------------------------------------------------------

_SED_PIECES = [
    ":x",
    ":x ",
    "bx",
    "b",
    "tx",
    "Tx",
    "b x",
    " ",
    "\t",
    ";",
    "\n",
    "}",
    "{",
    "#c",
    "#c\n",
    "a\\",
    "a\\\n",
    "a txt",
    "i\\",
    "c\\",
    "a",
    "e touch E",
    "e",
    "w W",
    "W W",
    "s/x/y/",
    "s/x/y/w W",
    "s/x/y/e",
    "s/x/touch E/e",
    "s/[/]/y/",
    "s|x|y|w W",
    "s/x/y/ w W",
    "y/a/b/",
    "r .env",
    "R .env",
    "r f",
    "p",
    "P",
    "l",
    "l 3",
    "q",
    "=",
    "z",
    "F",
    "n",
    "N",
    "1",
    "$",
    "/x/",
    "/x/I",
    "\\,x,",
    "!",
    ",",
    "1~2",
    "0,/x/",
    "+1",
    "[",
    "]",
    "\\",
    "v",
    "v 4.2",
    "/[/]/",
    "s/a/\\/w W/",
    "x",
    "h",
    "G",
]


@pytest.mark.skipif(SED is None, reason="GNU sed is not installed")
@SETTINGS
@given(
    st.lists(st.lists(st.sampled_from(_SED_PIECES), min_size=1, max_size=8), min_size=1, max_size=3)
)
def test_an_allowed_sed_script_only_reads_and_prints(
    tmp_path: Path, scripts: list[list[str]]
) -> None:
    assert SED is not None
    words = ["sed", "-n"]
    for s in scripts:
        words += ["-e", "".join(s)]
    words.append("f")
    if not _allowed(tmp_path, words):
        return
    created, out = _run_in_scratch(tmp_path, [SED, *words[1:]])
    assert not created, (words, created)
    assert SECRET not in out, words


@pytest.mark.skipif(SED is None, reason="GNU sed is not installed")
@pytest.mark.parametrize(
    "script",
    [
        ":x e touch E",
        ":x w W",
        ":x R .env",
        "/x/{:y e touch E\n}",
        "{:x};e touch E",
        ":x#c\nw W",
        "s/[/]/y/w W",
        "1!G;h;$!d;e touch E",
        "a\\\ntext\ne touch E",
        "y/a/b/;w W",
    ],
)
def test_the_known_label_tricks_are_caught(tmp_path: Path, script: str) -> None:
    # each of these really executes, writes or reads with GNU sed ...
    assert SED is not None
    created, out = _run_in_scratch(tmp_path, [SED, "-n", script, "f"])
    assert created or SECRET in out, script
    # ... and the guard does not allow it
    assert not _allowed(tmp_path, ["sed", "-n", script, "f"])


# --- awk ---------------------------------------------------------------------------------------

_AWK_PIECES = [
    "{",
    "}",
    "(",
    ")",
    ";",
    "\n",
    " ",
    "print",
    "printf",
    '"s"',
    "$1",
    "x",
    "a",
    "/",
    "/x/",
    "2",
    ">",
    ">>",
    '"W"',
    "|",
    '"cat"',
    'system("touch E")',
    "getline",
    "<",
    '".env"',
    'ENVIRON["M"]',
    "if",
    "else",
    "while",
    "for",
    "in",
    "[",
    "]",
    ",",
    "=",
    "+",
    "-",
    "*",
    "!",
    "~",
    "&&",
    "||",
    "?",
    ":",
    "#c\n",
    "\\\n",
    "BEGIN",
    "END",
    "NR",
    "length",
    "close",
    '"/dev/stderr"',
    "@",
    'ARGV[1]=".env"',
    "[/]",
    "x / 2 / 1",
]


@pytest.mark.skipif(AWK is None, reason="awk is not installed")
@SETTINGS
@given(st.lists(st.sampled_from(_AWK_PIECES), min_size=1, max_size=12))
def test_an_allowed_awk_program_only_reads_and_prints(tmp_path: Path, pieces: list[str]) -> None:
    assert AWK is not None
    program = " ".join(pieces)
    words = ["awk", program, "f"]
    if not _allowed(tmp_path, words):
        return
    created, out = _run_in_scratch(tmp_path, [AWK, program, "f"], env={"M": SECRET})
    assert not created, (program, created)
    assert SECRET not in out, program


@pytest.mark.skipif(AWK is None, reason="awk is not installed")
@pytest.mark.parametrize(
    "program",
    [
        'BEGIN { system("touch E") }',
        '{ print > "W" }',
        '{ print | "cat > W" }',
        'BEGIN { while ((getline l < ".env") > 0) print l }',
        'BEGIN { print ENVIRON["M"] }',
        'BEGIN { ARGV[1] = ".env"; ARGC = 2 } { print }',
        '{ printf "%s\\n", $0 > "W" }',
        '{ print $1,\n $2 > "W" }',
    ],
)
def test_awk_io_is_caught(tmp_path: Path, program: str) -> None:
    assert AWK is not None
    created, out = _run_in_scratch(tmp_path, [AWK, program, "f"], env={"M": SECRET})
    assert created or SECRET in out, program
    assert not _allowed(tmp_path, ["awk", program, "f"])


@pytest.mark.skipif(AWK is None, reason="awk is not installed")
@pytest.mark.parametrize(
    "program",
    [
        "{ print $1 }",
        "{ s += $1 } END { print s }",
        "NR == 1, /b/ { print }",
        "$1 > 5 { print $2 }",
        "{ x = 10 / 2; print x / 5 }",
        "length > 1",
        '{ print $0 > "/dev/stderr" }',
        '{ if ($1 > 0) print; else print "-" }',
    ],
)
def test_plain_awk_programs_are_allowed_and_harmless(tmp_path: Path, program: str) -> None:
    assert AWK is not None
    assert _allowed(tmp_path, ["awk", program, "f"])
    created, out = _run_in_scratch(tmp_path, [AWK, program, "f"], env={"M": SECRET})
    assert not created and SECRET not in out


# --- find ----------------------------------------------------------------------------------------


@pytest.mark.skipif(FIND is None, reason="find is not installed")
def test_the_find_primaries_have_the_arity_gnu_find_gives_them(tmp_path: Path) -> None:
    # GNU find refuses a primary given the wrong number of arguments before
    # it looks at any file: every entry in the guard's tables must parse
    assert FIND is not None
    version = subprocess.run([FIND, "--version"], capture_output=True, text=True).stdout
    if "GNU findutils" not in version:
        pytest.skip("find is not GNU find")
    values = {
        "-regextype": "posix-basic",
        "-type": "f",
        "-xtype": "f",
        "-perm": "644",
        "-size": "1k",
        "-fstype": "ext4",
        "-user": "root",
        "-group": "root",
        "-printf": "%p",
    }
    for primary in sorted(
        _NO_ARG
        - {
            "(",
            ")",
            "!",
            ",",
            "-not",
            "-a",
            "-and",
            "-o",
            "-or",
            "-help",
            "--help",
            "-version",
            "--version",
            "-context",
        }
    ):
        argv = [FIND, ".", primary, "-quit"]
        res = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True)
        assert res.returncode == 0, (primary, res.stderr)
    for primary in sorted(_TEXT_ARG - {"-context"}):
        argv = [FIND, ".", primary, values.get(primary, "1"), "-quit"]
        res = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True)
        assert res.returncode == 0, (primary, res.stderr)
    (tmp_path / "ref").write_text("")
    for primary in sorted(_PATH_ARG):
        res = subprocess.run(
            [FIND, ".", primary, "ref", "-quit"], cwd=tmp_path, capture_output=True, text=True
        )
        assert res.returncode == 0, (primary, res.stderr)
    for primary, arity in _WRITES.items():
        args = ["out", "%p"][:arity]
        res = subprocess.run(
            [FIND, ".", primary, *args, "-quit"], cwd=tmp_path, capture_output=True, text=True
        )
        assert res.returncode == 0, (primary, res.stderr)
