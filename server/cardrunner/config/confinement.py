"""Settings that confine the model's code: the sandbox, the commit hooks, the test arguments.

Kept apart from the rest of the settings because they are the security boundary: what a
review of this file has to get right is all here. The toolchain folders a sandbox shows by
default (`BUILD_READ`, `BUILD_WRITE`) are plain data in config/paths.py, which the sandbox reads
too: the idle language server describes its sandbox without loading pydantic.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from cardrunner.config.paths import BUILD_READ, BUILD_WRITE


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


PYTEST_FLAGS = [
    "-x", "--exitfirst", "-q", "--quiet", "-v", "--verbose", "-vv", "-l", "--showlocals",
    "--lf", "--last-failed", "--ff", "--failed-first", "--sw", "--stepwise", "--nf",
    "--new-first", "-s", "--no-header", "--no-summary", "--co", "--collect-only",
    "-ra", "-rA", "-rf", "-rs",
]  # fmt: skip
PYTEST_VALUES = ["-k", "-m", "--maxfail", "--tb", "--durations", "-W"]
PYTEST_LONG = {
    "--exitfirst": "-x", "--quiet": "-q", "--verbose": "-v", "--showlocals": "-l",
    "--last-failed": "--lf", "--failed-first": "--ff", "--stepwise": "--sw",
    "--new-first": "--nf", "--collect-only": "--co",
}  # fmt: skip
"""pytest's long options and their short forms: the model is shown one name per option."""


class TestArgs(_Strict):
    """What the model may append to the test command: selectors and these options only.

    Arguments are data, not options: a test path or node id inside the read area, and the
    options listed here. Anything that writes files or changes where things go
    (`--junitxml=…`, `--basetemp=…`, `-o`, `-p`, `-c`, `--rootdir` …) is refused, because the
    model could use it to write outside the write area or delete a folder.
    """

    __test__ = False  # not a pytest test class, whatever its name says

    flags: list[str] = Field(
        default_factory=lambda: list(PYTEST_FLAGS), description="Options without a value."
    )
    values: list[str] = Field(
        default_factory=lambda: list(PYTEST_VALUES),
        description="Options followed by one value (`-k EXPR`, or `--maxfail=2`).",
    )


class Sandbox(_Strict):
    """How commands that run project code are confined (build, test, app, MCP servers).

    The model writes code and then runs it; without a sandbox that code has the user's rights.
    `bwrap` (the default) confines every such process; a run refuses to start where bubblewrap
    cannot. `off` is the explicit opt-out for machines without user namespaces.
    """

    mode: Literal["bwrap", "off"] = "bwrap"
    network: bool = Field(False, description="Let sandboxed commands reach the network.")
    env: list[str] = Field(
        default_factory=list,
        description="Extra environment variable names passed on to commands (secret-looking "
        "names such as *_TOKEN are never passed).",
    )

    build_write: list[str] = Field(
        default_factory=lambda: list(BUILD_WRITE),
        description="Folders outside the work tree that builds and tests may write (toolchain "
        "caches; `~` is your home). The work tree itself is always writable for them, except "
        ".git, .cardrunner, the cards and cardrunner's settings files. Secret stores are never "
        "shown.",
    )
    build_read: list[str] = Field(
        default_factory=lambda: list(BUILD_READ),
        description="Folders in your home shown read-only (toolchains); the rest of the home "
        "is hidden from builds, tests, the app and MCP servers.",
    )

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        """`sandbox = "off"` is short for `[sandbox] mode = "off"`."""
        return {"mode": value} if isinstance(value, str) else value


class GitHooks(_Strict):
    """Whether the repository's own commit hooks run before a run's commit is reviewed."""

    hooks: bool = Field(
        True,
        description="Run the repository's pre-commit and commit-msg hooks (in the sandbox, on "
        "the tree to be committed) before the review; a failing hook goes back to the model. "
        "False skips them. They are the repository's code: trusting the repository covers them.",
    )
