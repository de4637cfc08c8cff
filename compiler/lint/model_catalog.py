"""The model names Leviath's build knows, for the linter's model checks.

Three providers publish a short, closed list of models (anthropic, openai,
google): a name missing from it is worth a warning (``unknown-model``). The
others serve whatever is installed (ollama), proxy hundreds (openrouter) or
are defined by a script, so their names are never checked. Context windows,
where known, let ``unbounded-percentage-budget`` say what a percentage budget
resolves to. The user's ``[model_capabilities.<model>] max_context_tokens``
adds to or overrides a window.

The rows are the ones Leviath's own catalog held at the snapshot the corpora
come from (see docs/projects.md); nothing here is fetched.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["CLOSED_PROVIDERS", "KNOWN_MODELS", "PROVIDERS", "is_known", "window"]

CLOSED_PROVIDERS: tuple[str, ...] = ("anthropic", "openai", "google")
# The providers Leviath registers by name; a script provider is any other
# name declared under [model_providers.<name>] in the user's config.
PROVIDERS: tuple[str, ...] = (
    "anthropic",
    "openai",
    "google",
    "openrouter",
    "ollama",
    "claude-code",
)

# (provider, model) -> context window in tokens.
KNOWN_MODELS: Mapping[tuple[str, str], int] = MappingProxyType(
    {
        ("anthropic", "claude-opus-5"): 1_000_000,
        ("anthropic", "claude-sonnet-5"): 1_000_000,
        ("anthropic", "claude-fable-5"): 1_000_000,
        ("anthropic", "claude-opus-4-8"): 1_000_000,
        ("anthropic", "claude-opus-4-7"): 1_000_000,
        ("anthropic", "claude-opus-4-6"): 1_000_000,
        ("anthropic", "claude-sonnet-4-6"): 1_000_000,
        ("anthropic", "claude-haiku-4-5-20251001"): 200_000,
        ("openai", "gpt-5.5"): 1_050_000,
        ("openai", "gpt-5.4"): 1_050_000,
        ("openai", "gpt-5.4-mini"): 400_000,
        ("openai", "gpt-5.4-nano"): 400_000,
        ("google", "gemini-3.5-flash"): 1_048_576,
        ("google", "gemini-3.1-pro-preview"): 1_048_576,
        ("google", "gemini-3-flash"): 1_048_576,
        ("google", "gemini-3.1-flash-lite"): 1_048_576,
        ("openrouter", "anthropic/claude-opus-5"): 1_000_000,
        ("openrouter", "anthropic/claude-sonnet-5"): 1_000_000,
        ("openrouter", "google/gemini-3.5-flash"): 1_048_576,
        ("openrouter", "google/gemini-2.5-pro"): 1_048_576,
        ("openrouter", "google/gemini-2.5-flash"): 1_048_576,
        ("openrouter", "meta-llama/llama-4-maverick"): 1_048_576,
        ("openrouter", "meta-llama/llama-4-scout"): 10_000_000,
        ("openrouter", "deepseek/deepseek-v3.2"): 131_072,
        ("openrouter", "mistralai/mistral-large-2512"): 262_144,
        ("openrouter", "qwen/qwen3-max"): 131_072,
    }
)


def is_known(provider: str, model: str) -> bool | None:
    """True or False for a closed catalog; None when the provider's catalog
    is open, so nothing can be said."""
    if provider not in CLOSED_PROVIDERS:
        return None
    return (provider, model) in KNOWN_MODELS


def window(provider: str, model: str, overrides: Mapping[str, int] | None = None) -> int | None:
    if overrides and model in overrides:
        return overrides[model]
    return KNOWN_MODELS.get((provider, model))
