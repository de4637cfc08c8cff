"""What a sandbox hides, protects and bounds when nobody says otherwise.

These lists are data the compiler copies into every profile it resolves, so
a plan says exactly what its commands cannot see; the runtime never adds to
them behind the plan's back.
"""

from __future__ import annotations

__all__ = [
    "CREDENTIALS",
    "HIDDEN",
    "READ_ONLY",
    "SYSTEM_READ",
]

# Credential stores under the user's home. Listed one by one (as well as the
# home as a whole) because the home is only hidden wholesale when the
# workspace is not the home itself or inside one of these.
CREDENTIALS: tuple[str, ...] = (
    "~/.ssh",
    "~/.gnupg",
    "~/.aws",
    "~/.azure",
    "~/.config/gcloud",
    "~/.config/gh",
    "~/.config/hub",
    "~/.config/charter",
    "~/.kube",
    "~/.docker",
    "~/.netrc",
    "~/.npmrc",
    "~/.yarnrc",
    "~/.pypirc",
    "~/.git-credentials",
    "~/.gitconfig",
    "~/.cargo/credentials",
    "~/.cargo/credentials.toml",
    "~/.terraform.d",
    "~/.password-store",
    "~/.local/share/keyrings",
    "~/.claude",
    "~/.claude.json",
    "~/.gemini",
    "~/.codex",
    "~/.leviath",
    "~/.bash_history",
    "~/.zsh_history",
    "~/.python_history",
)

# Hidden altogether: the user's home (their other files), every other home,
# the system's runtime sockets (a container engine's socket is a root shell),
# and the few system files that hold secrets readable by root.
HIDDEN: tuple[str, ...] = (
    "~",
    "/home",
    "/root",
    "/run",
    "/var/run",
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/shadow-",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh",
    *CREDENTIALS,
)

# Inside the writable workspace, these stay read-only: a command that could
# write them could plant code that a later, uncontained program runs (git
# hooks, a client's settings and MCP servers) or rewrite the run's records.
READ_ONLY: tuple[str, ...] = (
    ".git",
    ".charter",
    ".claude",
    ".gemini",
    ".codex",
    ".cursor",
    ".mcp.json",
)

# Without a mount namespace (Landlock alone), reading is an allow-list too:
# these system trees, the workspace and the runtime's own files.
SYSTEM_READ: tuple[str, ...] = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/var",
    "/srv",
    "/nix",
    "/snap",
    "/sys",
)
