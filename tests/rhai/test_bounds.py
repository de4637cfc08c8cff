"""Hostile scripts end within their bounds, fast, and a limit cannot be
caught by the script that reached it."""

from __future__ import annotations

import time

import pytest

from charter.runtime.rhai import Engine, Limits, RhaiLimitError, RhaiSyntaxError, parse_script

HOSTILE = {
    "infinite loop": "loop { }",
    "infinite loop inside try": "try { while true { } } catch { 1 }",
    "exponential string growth": 'let s = "x"; loop { s = s + s; }',
    "string growth by template": 'let s = "ab"; loop { s = `${s}${s}`; }',
    "padding past the bound": 'let s = ""; s.pad(2000000000, "x"); s',
    "replace that multiplies": 'let s = "aaaaaaaaaa"; loop { s.replace("a", "aaaaaaaaaa"); }',
    "deep recursion": "fn f(n) { f(n + 1) + 1 } f(0)",
    "mutual recursion": "fn a(n) { b(n) } fn b(n) { a(n) } a(1)",
    "nested arrays fill memory": (
        "let big = []; for i in 0..9999 { big.push(i); } let all = []; loop { all.push(big); }"
    ),
    "maps of copies": 'let m = #{}; let i = 0; loop { m[`k${i}`] = "v"; i += 1; }',
    "power that would be huge": "2 ** 100000000",
    "shift that would be huge": "1 << 100000000",
}


@pytest.mark.parametrize("script", HOSTILE.values(), ids=list(HOSTILE))
def test_hostile_scripts_stop_within_their_bounds(script: str) -> None:
    start = time.monotonic()
    try:
        Engine().run(parse_script(script, "hostile.rhai"))
    except RhaiLimitError as exc:
        assert exc.path == "hostile.rhai"
    except Exception as exc:  # an ordinary error (overflow) is also a stop
        assert "overflow" in str(exc).lower() or "too many bits" in str(exc), exc
    else:
        pytest.fail("the hostile script finished normally")
    assert time.monotonic() - start < 20


def test_the_wall_clock_bound_stops_a_slow_script() -> None:
    limits = Limits(max_operations=10**12, max_seconds=0.5)
    start = time.monotonic()
    with pytest.raises(RhaiLimitError, match="longer than"):
        Engine(limits).run(parse_script("let x = 0; loop { x += 1; if x < 0 { break; } }"))
    assert time.monotonic() - start < 3


def test_deep_nesting_is_a_syntax_error_not_a_crash() -> None:
    for text in ("(" * 5000 + "1" + ")" * 5000, "[" * 5000 + "]" * 5000, "-" * 5000 + "1"):
        with pytest.raises(RhaiSyntaxError, match="nests deeper"):
            parse_script(text)
    deep_blocks = "{" * 5000 + "}" * 5000
    with pytest.raises(RhaiSyntaxError):
        parse_script(deep_blocks)


def test_host_functions_count_toward_the_bounds() -> None:
    from charter.runtime.rhai import HostFunction

    def big() -> str:
        return "x" * 2_000_000

    engine = Engine(host={"big": HostFunction("big", frozenset({0}), big)})
    with pytest.raises(RhaiLimitError, match="string grew past"):
        engine.run(parse_script("big()"))


_TOKENS = (
    "let x y = 1 2.5 \"s\" 'c' `a${x}b` + - * / % ** == != < > && || ! ( ) [ ] { } #{ a: , ; . "
    "len() push(1) if else while loop break continue for in 0..3 fn f(x) f(1) return throw try "
    "catch (e) switch => _ |x| || () true false ?. ?? [0] += x.a x[0] .. ..= << >> & | ^ const "
    'this to_json(x) parse_json("[1]") sub_string(1,2) replace("a","b") split(",") type_of(x)'
).split()


def test_random_programs_end_in_a_rhai_error_or_a_value_never_a_python_error() -> None:
    # Bad input gets a Rhai error with a position, never a traceback.
    import random

    from charter.runtime.rhai import RhaiError

    rng = random.Random(20261204)
    for _ in range(3000):
        text = " ".join(rng.choice(_TOKENS) for _ in range(rng.randint(1, 25)))
        try:
            script = parse_script(text, "fuzz.rhai")
            Engine(Limits(max_operations=2000, max_seconds=1)).run(
                script, {"x": [1, 2], "y": {"a": 1}}
            )
        except RhaiError as exc:
            assert exc.path == "fuzz.rhai" and exc.line >= 1, text
