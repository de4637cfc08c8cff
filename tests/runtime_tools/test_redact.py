from __future__ import annotations

import pytest

from charter.runtime.redact import FAILED_MARKER, Redactor, sensitive_name


def test_views() -> None:
    r = Redactor()
    r.add("hunter2-value", "DB_PASSWORD", "binding")
    text = "password is hunter2-value."
    assert r.redact(text, "model") == "password is <redacted>."
    assert r.redact(text, "operator") == "password is <redacted:DB_PASSWORD>."
    assert r.redact(text, "event") == "password is <redacted:DB_PASSWORD@binding>."
    assert r.redact(text, "stored") == "password is <redacted:DB_PASSWORD@binding>."


def test_longest_value_first() -> None:
    r = Redactor()
    r.add("abcd", "SHORT")
    r.add("abcd-efgh-ijkl", "LONG")
    assert r.redact("x abcd-efgh-ijkl y abcd", "operator") == "x <redacted:LONG> y <redacted:SHORT>"


def test_short_values_are_not_secrets() -> None:
    r = Redactor()
    assert not r.add("abc", "PIN")
    assert r.redact("abc abc", "model") == "abc abc"


def test_env_collection_uses_names() -> None:
    r = Redactor()
    n = r.add_env(
        {
            "OPENAI_API_KEY": "sk-123456",
            "GITHUB_TOKEN": "ghp_123456",
            "PGPASSWORD": "pg-pass-1",
            "PATH": "/usr/bin:/bin",
            "PWD": "/home/me/project",
        }
    )
    assert n == 3
    assert r.redact("/usr/bin sk-123456 ghp_123456 pg-pass-1", "model") == (
        "/usr/bin <redacted> <redacted> <redacted>"
    )


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("curl https://bob:pa55word@example.com/x", "pa55word"),
        ("git clone https://ghp_tok3n@github.com/o/r", "ghp_tok3n"),
        ("GET https://api.example.com/v1?page=2&api_key=QWERTY123", "QWERTY123"),
        ("https://s3.example.com/o?X-Amz-Signature=deadbeef99", "deadbeef99"),
        ("curl -H 'Authorization: Bearer eyJhbGciOi.x.y' https://x", "eyJhbGciOi.x.y"),
        ("Authorization: Basic dXNlcjpwYXNz", "dXNlcjpwYXNz"),
        ("X-Api-Key: key-7777", "key-7777"),
        ("tool --token=tok-99999 --verbose", "tok-99999"),
        ("tool --password 'my pass word'", "my pass word"),
        ("mysql --db-password=zzz9999", "zzz9999"),
        ("export GITHUB_TOKEN=ghp_abcdef", "ghp_abcdef"),
        ('API_KEY="quoted-value" make', "quoted-value"),
        ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI run", "wJalrXUtnFEMI"),
    ],
)
def test_discovery(text: str, secret: str) -> None:
    r = Redactor()
    assert r.discover(text) >= 1
    out = r.redact(f"{text}\nlater the value {secret} leaks", "model")
    assert secret not in out
    assert "<redacted>" in out


@pytest.mark.parametrize(
    "text",
    [
        "ls -la --color=auto",
        "https://example.com/search?q=hello&page=2",
        "PATH=/usr/bin make",
        "git log --author=someone",
    ],
)
def test_no_false_discovery(text: str) -> None:
    r = Redactor()
    assert r.discover(text) == 0


def test_structured_values() -> None:
    r = Redactor()
    r.discover_value({"headers": {"x-auth": "plain"}, "password": "p4ssw0rd!", "n": 3})
    assert r.redact_value({"a": ["p4ssw0rd!", 1]}, "operator") == {"a": ["<redacted:password>", 1]}


def test_cut_secret_at_the_end_is_masked() -> None:
    r = Redactor()
    r.add("SUPERSECRETVALUE", "TOKEN")
    assert r.redact_cut("output ... SUPERSEC", "model") == "output ... <redacted>"
    assert r.redact_cut("output ... SUP", "model") == "output ... SUP"  # 3 chars reveal nothing


def test_failure_yields_the_marker() -> None:
    r = Redactor()
    r.add("abcdef", "X")
    assert r.redact(None, "model") == FAILED_MARKER  # type: ignore[arg-type]
    assert r.redact("abcdef", "debug") == FAILED_MARKER  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "sensitive"),
    [
        ("GITHUB_TOKEN", True),
        ("api_key", True),
        ("x-api-key", True),
        ("client_secret", True),
        ("DBPASSWORD", True),
        ("PATH", False),
        ("PWD", False),
        ("KEYBOARD", False),
        ("AUTHOR", False),
        ("monkey", False),
    ],
)
def test_sensitive_name(name: str, sensitive: bool) -> None:
    assert sensitive_name(name) is sensitive


def test_output_reveals_url_passwords_tokens_and_headers() -> None:
    r = Redactor()
    out = (
        "origin\thttps://x-access-token:ghs_16C7e42F292c6912E7710c838347Ae178B4a@github.com/o/r"
        " (fetch)\n"
        "mirror\thttps://ghp_aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5@github.com/o/r (push)\n"
        "> Authorization: Bearer eyJhbGciOi.payload.sig\n"
        "see https://api.example.com/v1?access_token=tok-98765&page=2\n"
    )
    assert r.discover_in_output(out) == 4
    shown = r.redact(out, "operator")
    for secret in ("ghs_16C7e42F", "ghp_aB3dE5", "eyJhbGciOi", "tok-98765"):
        assert secret not in shown
    assert "<redacted:github.com password>" in shown
    assert "page=2" in shown


def test_output_discovery_leaves_code_and_user_names_alone() -> None:
    # Assignments, options and plain user names in output are not secrets:
    # treating them as such would redact `tokens[0]` or `alice` everywhere.
    r = Redactor()
    out = (
        "token = tokens[0]\n"
        "password_field = form.cleaned_data\n"
        "run with --token-file ./secrets.txt\n"
        "origin https://alice@bitbucket.org/team/repo.git (fetch)\n"
    )
    assert r.discover_in_output(out) == 0
    assert r.redact(out, "model") == out
