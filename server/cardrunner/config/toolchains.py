"""The toolchain folders in the home that a sandbox shows by default (`[sandbox]`'s defaults).

A module of its own, plain data, so the sandbox (`processes/sandbox.py`) reads them without the
settings' models: the idle language server describes its sandbox without loading pydantic.
"""

from __future__ import annotations

BUILD_WRITE = [
    "~/.cache", "~/.npm", "~/.cargo/registry", "~/.cargo/git", "~/.rustup", "~/.gradle/caches",
    "~/.m2/repository", "~/go/pkg/mod", "~/.local/share/pnpm", "~/.yarn/berry/cache",
    "~/.bun/install/cache", "~/.deno",
]  # fmt: skip
"""Toolchain caches builds and tests may write by default (those that exist)."""

BUILD_READ = [
    "~/.cargo/bin", "~/.local/bin", "~/.local/lib", "~/.pyenv", "~/.nvm", "~/.volta", "~/.bun/bin",
    "~/go/bin", "~/.sdkman", "~/.rbenv", "~/.asdf", "~/.local/share/mise", "~/.local/share/fnm",
]  # fmt: skip
"""Toolchains in the home shown read-only by default (those that exist)."""
