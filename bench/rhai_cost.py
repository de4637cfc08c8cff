"""What Charter's Rhai interpreter costs per bundled script-tool call.

    python bench/rhai_cost.py [--runs 200]

Runs Leviath's own ``web_search.rhai`` and ``web_fetch.rhai`` (from
``../shared/corpora``; skipped when absent) with in-process host functions
that answer at once, so the figure is the interpreter's work alone: parsing
(once per plan) and evaluating (every call). As the reference, the same run
times the built-in ``html_to_text`` of the web tools on the same page and a
``json.loads`` of the same search answer, which are what the tools' Python
equivalents would spend. Prints best-of-runs milliseconds and the ratios.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path

from charter.runtime.rhai import Engine, HostFunction, parse_script
from charter.runtime.tools.web import html_to_text

CORPUS = Path(__file__).resolve().parent.parent.parent / "shared/corpora/leviath/agents/researcher"
PAGE = "<html><body>" + "<p>Some prose &amp; a <a href='#'>link</a>.</p>\n" * 400 + "</body></html>"
ANSWER = json.dumps(
    {"web": {"results": [{"title": f"T{i}", "url": f"https://e/{i}", "description": "d" * 200,
                          "page_age": "2026-01-01"} for i in range(10)]}}
)  # fmt: skip


def _best(fn: Callable[[], object], runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best * 1000


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    runs = ap.parse_args().runs
    if not CORPUS.is_dir():
        print(f"skipped: {CORPUS} is absent")
        return 0

    def host(body: str) -> dict[str, HostFunction]:
        return {
            "env_var": HostFunction("env_var", frozenset({1}), lambda name: "key"),
            "http_get": HostFunction("http_get", frozenset({1, 2}), lambda url, h=None: body),
        }

    rows = []
    for name, body, params, reference, ref_name in (
        (
            "web_search",
            ANSWER,
            {"query": "q", "count": 10},
            lambda: json.loads(ANSWER),
            "json.loads",
        ),
        ("web_fetch", PAGE, {"url": "https://e/"}, lambda: html_to_text(PAGE), "html_to_text"),
    ):
        text = (CORPUS / "tools" / f"{name}.rhai").read_text()
        parse_ms = _best(lambda text=text, name=name: parse_script(text, name), runs)
        script = parse_script(text, name)
        engine = Engine(host=host(body))
        run_ms = _best(lambda e=engine, s=script, p=params: e.run(s, {"params": p}), runs)
        ref_ms = _best(reference, runs)
        rows.append((name, parse_ms, run_ms, ref_name, ref_ms))
    print(f"{'tool':<11} {'parse ms':>9} {'run ms':>8}   reference       {'ms':>7}  run/ref")
    for name, parse_ms, run_ms, ref_name, ref_ms in rows:
        print(
            f"{name:<11} {parse_ms:9.3f} {run_ms:8.3f}   {ref_name:<14} {ref_ms:7.3f}  "
            f"{run_ms / ref_ms:6.1f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
