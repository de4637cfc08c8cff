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


# -- parity with Demiurge's redactor (issue 15) ------------------------------------------


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("< apikey: ak-parity-000111\n", "ak-parity-000111"),
        ("> X-Api-Token: xt-parity-222333\n", "xt-parity-222333"),
        ("> x-access-token: xa-parity-444555\n", "xa-parity-444555"),
        ("> X-Goog-Api-Key: AIzaParity666777\n", "AIzaParity666777"),
        ("> Authorization: DPoP dp-parity-888999\n", "dp-parity-888999"),
        # percent-encoded in the output: hidden as printed and as decoded
        (
            "GET https://h.example/cb?access_token=SYN%5FENC%5FSECRET&mode=summary",
            "SYN%5FENC%5FSECRET",
        ),
        ("GET https://h.example/cb?access_token=SYN%5FENC%5FSECRET&mode=summary", "SYN_ENC_SECRET"),
        ("remote https://bob:p%40ss-w0rd-1@h.example/r", "p%40ss-w0rd-1"),
        ("remote https://bob:p%40ss-w0rd-1@h.example/r", "p@ss-w0rd-1"),
    ],
)
def test_output_shapes_demiurge_recognises(text: str, secret: str) -> None:
    r = Redactor()
    assert r.discover_in_output(text) >= 1
    out = r.redact(f"{text}\nlater: {secret}", "model")
    assert secret not in out
    assert "mode=summary" in out or "mode=summary" not in text


def test_a_bearer_token_echoed_without_its_prefix_is_hidden() -> None:
    r = Redactor()
    r.discover_value({"headers": {"Authorization": "Bearer syn-auth-token-42"}})
    assert r.redact("the token was syn-auth-token-42", "model") == "the token was <redacted>"


def test_key_material_is_a_sensitive_field() -> None:
    r = Redactor()
    r.discover_value({"key_material": "-----BEGIN KEY----- abc123"})
    assert "abc123" not in r.redact("-----BEGIN KEY----- abc123", "model")


def test_secrets_used_as_mapping_keys_are_removed_from_keys_too() -> None:
    r = Redactor()
    key_secret = "SYNTHETIC_SECRET_MAPPING_KEY"
    r.discover_value({"api_key": key_secret, "password": ["SYNTHETIC_NESTED_VALUE"]})
    data = {"metadata": {key_secret: "public", "other": "SYNTHETIC_NESTED_VALUE"}}
    for view in ("model", "operator", "stored"):
        shown = r.redact_value(data, view)  # type: ignore[arg-type]
        text = str(shown)
        assert key_secret not in text and "SYNTHETIC_NESTED_VALUE" not in text
        assert "public" in text


def test_keys_that_differ_only_in_a_secret_are_both_kept() -> None:
    r = Redactor()
    r.add("tok-aaaa-1111", "A")
    r.add("tok-bbbb-2222", "B")
    shown = r.redact_value({"x tok-aaaa-1111": 1, "x tok-bbbb-2222": 2}, "model")
    assert shown == {"x <redacted>": 1, "x <redacted>#2": 2}


def test_a_url_used_as_a_key_teaches_its_password() -> None:
    r = Redactor()
    r.discover_value({"https://u:k3y-in-a-key@h.example/": "x"})
    assert "k3y-in-a-key" not in r.redact("k3y-in-a-key", "model")


def test_header_names_inside_urls_and_scheme_words_alone_are_not_headers() -> None:
    r = Redactor()
    # a scheme word alone at a line's end, then an unrelated next line
    assert r.discover_in_output("> Authorization: Bearer\nnext-line-word\n") == 0
    # `proxy-authorization` holds `authorization`: one header, one value
    assert r.discover_in_output("Proxy-Authorization: Basic cHJveHk6cGFzcw==") == 1


def test_marker_names_never_hold_angle_brackets() -> None:
    r = Redactor()
    r.discover_value({"<b>_password": "v4lue-with-name"})
    assert r.redact("v4lue-with-name", "operator") == "<redacted:b_password>"
