"""Generate the JSON Schemas published in ``schemas/`` from the models.

Run ``python -m charter.compiler.schemagen`` after changing a model; a test
fails while a committed schema is stale. Editors pick the schemas up through
``# yaml-language-server: $schema=...`` (YAML) or ``#:schema ...`` (TOML).
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["BASE_URL", "SCHEMAS", "generate", "main"]

BASE_URL = "https://charter.dev/schemas/"

# file name -> (module, model, title)
SCHEMAS: dict[str, tuple[str, str, str]] = {
    "agent.v1.json": ("charter.compiler.frontends.agent_yaml", "AgentCore", "Charter agent.yaml"),
    "agent-fallback.v1.json": (
        "charter.compiler.frontends.agent_yaml",
        "AgentFallback",
        "Charter global fallback agents/agent.yaml",
    ),
    "tool.v1.json": ("charter.compiler.frontends.tool_yaml", "ToolSpec", "Charter tool.yaml"),
    "mcp-server.v1.json": (
        "charter.compiler.frontends.mcp_manifest",
        "McpServer",
        "Charter MCP server manifest",
    ),
    "blueprint.v1.json": (
        "charter.compiler.frontends.blueprint",
        "Blueprint",
        "Charter blueprint (agent.leviath / blueprint.toml)",
    ),
    "stage.v1.json": ("charter.compiler.frontends.blueprint", "StageTable", "Charter stage file"),
    "config.v1.json": (
        "charter.compiler.frontends.config_toml",
        "UserConfig",
        "Charter config.toml",
    ),
    "charter.v1.json": (
        "charter.compiler.frontends.charter_toml",
        "ProjectSettings",
        "Charter project settings (charter.toml)",
    ),
    "plan.v1.json": ("charter.runtime.plan", "Plan", "Charter compiled plan"),
}


def generate() -> dict[str, str]:
    """Schema file name -> its text."""
    out: dict[str, str] = {}
    for name, (module, attr, title) in SCHEMAS.items():
        model = getattr(importlib.import_module(module), attr)
        schema: dict[str, Any] = model.model_json_schema(mode="validation")
        schema = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": BASE_URL + name,
            **{k: v for k, v in schema.items() if k != "title"},
            "title": title,
        }
        out[name] = json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    return out


def schema_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "schemas"


def main(argv: list[str] | None = None) -> int:
    target = Path(argv[0]) if argv else schema_dir()
    for name, text in generate().items():
        (target / name).write_text(text, encoding="utf-8")
        print(f"wrote {target / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
