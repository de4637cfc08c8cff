"""``charter check-url``: exit codes, formats, JSONL, and no HTTP stack imported."""

from __future__ import annotations

import io
import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from charter.compiler.cli import main


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["check-url", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("argv", "code", "first_line"),
    [
        (["http://8.8.8.8/"], 0, "allow  [public-address]"),
        (["http://0x7f.1/"], 1, "deny  [loopback-address]"),
        (["--allow-local-network", "http://0x7f.1/"], 0, "allow  [local-network-allowed]"),
        (["--allow-local-network", "http://169.254.169.254/"], 1, "deny  [metadata-address]"),
        (["https://example.com/"], 3, "ask  [needs-dns]"),
        (["ftp://example.com/"], 1, "deny  [unsupported-scheme]"),
    ],
)
def test_single_url_text(
    capsys: pytest.CaptureFixture[str], argv: list[str], code: int, first_line: str
) -> None:
    got, out, _ = _run(capsys, *argv)
    assert got == code
    # As the other check verbs print: decision, [rule], then why.
    assert out.splitlines()[0].startswith(first_line + "  ")
    assert "needs-dns: needs-dns" not in out


def test_single_url_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--format", "json", "HTTP://u:secret@Example.COM.:80/a\\b#x")
    assert code == 3
    data = json.loads(out)
    assert data["decision"] == "needs-dns"
    assert data["normalized"] == "http://example.com/a/b"
    assert data["origin"] == "http://example.com:80"
    assert "secret" not in out


def test_usage_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert _run(capsys)[0] == 2
    assert _run(capsys, "http://a/", "--jsonl")[0] == 2
    assert _run(capsys, "--format", "yaml", "http://a/")[0] == 2


def _jsonl(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    text: str,
    *argv: str,
) -> tuple[int, list[dict[str, Any]], str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    code, out, err = _run(capsys, "--jsonl", *argv)
    return code, [json.loads(line) for line in out.splitlines()], err


def test_jsonl(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [
        {"id": 1, "url": "http://8.8.8.8"},
        {"id": "two", "url": "http://2130706433/"},
        {"id": 3, "url": "https://example.org/x"},
    ]
    text = "".join(json.dumps(x) + "\n" for x in lines) + "\n"
    code, rows, _ = _jsonl(capsys, monkeypatch, text)
    assert [(r["id"], r["decision"], r["rule"], r["normalized"]) for r in rows] == [
        (1, "allow", "public-address", "http://8.8.8.8/"),
        ("two", "deny", "loopback-address", "http://127.0.0.1/"),
        (3, "ask", "needs-dns", "https://example.org/x"),
    ]
    assert all(set(r) == {"id", "decision", "rule", "reason", "normalized"} for r in rows)
    assert "loopback" in rows[1]["reason"]
    assert code == 1  # the worst line decides
    code, rows, _ = _jsonl(capsys, monkeypatch, text, "--allow-local-network")
    assert [r["decision"] for r in rows] == ["allow", "allow", "ask"] and code == 3
    code, rows, _ = _jsonl(capsys, monkeypatch, json.dumps(lines[0]) + "\n")
    assert code == 0


def test_jsonl_malformed_lines(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = '{"id": 1, "url": "http://8.8.8.8"}\n[1]\n{"id": 7}\n{oops\n'
    code, rows, err = _jsonl(capsys, monkeypatch, text)
    assert code == 2
    assert [r["decision"] for r in rows] == ["allow", "deny", "deny", "deny"]
    assert [r["rule"] for r in rows[1:]] == ["malformed-request"] * 3
    assert rows[2]["id"] == 7
    # Each answer names its line, as every check verb's --jsonl does.
    assert [r["reason"].split(":")[0] for r in rows[1:]] == ["line 2", "line 3", "line 4"]


def test_resolve_checks_every_answer(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    table = {
        "public.test": ["93.184.215.14"],
        "mixed.test": ["93.184.215.14", "10.0.0.7"],
    }

    def fake_getaddrinfo(host: str, port: int, *args: object) -> list[Any]:
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [
            (socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port))
            for a in table[host]
        ]

    monkeypatch.setattr(socket, "getaddrinfo", fake_getaddrinfo)
    code, out, _ = _run(capsys, "--resolve", "--format", "json", "https://public.test/")
    assert code == 0 and json.loads(out)["addresses"] == ["93.184.215.14"]
    code, out, _ = _run(capsys, "--resolve", "--format", "json", "https://mixed.test/")
    assert code == 1 and json.loads(out)["reason"] == "private-address"
    assert json.loads(out)["address"] == "10.0.0.7"
    code, out, _ = _run(capsys, "--resolve", "https://nowhere.test/")
    assert code == 1 and out.startswith("deny  [dns-failure]  ")
    # Without --resolve nothing is looked up.
    assert _run(capsys, "https://mixed.test/")[0] == 3


def test_no_http_stack_imported(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from charter.compiler.cli import main\n"
        "code = main(['check-url', '--resolve', 'http://[::1]/'])\n"
        "heavy = sorted(m for m in ('httpx', 'httpx2', 'httpcore', 'mcp', 'anyio') "
        "if m in sys.modules)\n"
        "print(code, heavy)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.splitlines()[-1] == "1 []"


def test_jsonl_odd_ids_and_surrogates(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = '{"id": "\\ud800", "url": "http://8.8.8.8/"}\n{"id": [1], "url": "http://\\ud800/"}\n'
    code, rows, _ = _jsonl(capsys, monkeypatch, text)
    # A lone surrogate is no text: the line is malformed (never allowed),
    # whether it is in the id or the URL; the id is still echoed.
    assert [(r["id"], r["decision"], r["rule"]) for r in rows] == [
        ("\ud800", "deny", "malformed-request"),
        ([1], "deny", "malformed-request"),
    ]
    assert code == 2


@pytest.mark.parametrize(
    ("url", "address", "allowed"),
    [
        ("http://[::ffff:7f00:1]/", "::ffff:127.0.0.1", False),
        ("http://[::ffff:127.0.0.1]:8080/x", "::ffff:127.0.0.1", False),
        ("http://[::ffff:808:808]/", "::ffff:8.8.8.8", True),
    ],
)
def test_an_ipv4_mapped_address_prints_the_same_on_every_python(
    capsys: pytest.CaptureFixture[str], url: str, address: str, allowed: bool
) -> None:
    # Python 3.11 writes these in hex (::ffff:7f00:1), 3.13 in mixed notation:
    # every field Charter prints uses its own, mixed notation.
    got, out, _ = _run(capsys, url, "--format", "json")
    answer = json.loads(out)
    assert got == (0 if allowed else 1)
    assert answer["normalized"].startswith(f"http://[{address}]")
    if allowed:
        assert answer["addresses"] == [address] and answer["address"] is None
    else:
        assert answer["address"] == address and answer["addresses"] == []
    assert answer["detail"].startswith(f"{address}: ")
    assert "7f00" not in out and "808:808" not in out
