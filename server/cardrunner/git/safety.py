"""Git that never runs the repository's commands: the argv and environment of every git call.

A repository's `.git/config` arrives with the code (a zip, a copied folder, a `.git` someone
prepared) and can name commands git runs on its own: an fsmonitor, hooks, a pager, clean/smudge
filters, textconv and merge drivers, an ssh command, credential helpers, a gpg program. None of
them may run because cardrunner looked at a folder. Git has no switch for "ignore the repository's
commands", so every call gets

- fixed `-c` settings for what can be turned off outright (fsmonitor, hooks, pager, `ext::`
  remotes, implicit bare repositories — a committed folder shaped like a bare repository is
  never entered), `--no-ext-diff --no-textconv` on every command that can print a patch
  (an empty `diff.external` does not disable it, git then tries to run ""), and git's own
  upload-pack/receive-pack on every command that talks to a remote;
- for each command-valued key the *repository* sets (scope local or worktree, includes counted),
  an override read from `git config --list --show-scope` that puts back the user's own value
  (global, system or command line) or a harmless one. The user's config keeps working: their
  credential helper, their signing program, their LFS filter.

`git config --list` only reads files; it runs nothing, so it is safe to ask first.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

BASE_CONFIG: tuple[str, ...] = (
    "-c", "core.fsmonitor=false",
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.pager=cat",
    "-c", "safe.bareRepository=explicit",
    "-c", "protocol.ext.allow=never",
    "-c", "gc.auto=0",
    "-c", "maintenance.auto=false",
    "-c", "core.quotePath=false",
)  # fmt: skip
"""What is turned off whatever any config says (command-line config is read last and wins)."""

LIST_CONFIG: tuple[str, ...] = ("config", "--list", "--show-scope", "-z")
"""The listing `overrides` reads; run with `BASE_CONFIG` and without overrides."""

PATCH_COMMANDS = frozenset({"diff", "log", "show", "format-patch"})
"""Subcommands that can run an external diff or textconv: they get `PATCH_OPTIONS`."""
PATCH_OPTIONS = ("--no-ext-diff", "--no-textconv")
REMOTE_OPTIONS = {
    "ls-remote": ("--upload-pack=git-upload-pack",),
    "fetch": ("--upload-pack=git-upload-pack",),
    "push": ("--receive-pack=git-receive-pack",),
}
"""A remote's `uploadpack`/`receivepack` runs locally for a path remote, and for these keys git
takes the *first* value it reads (the repository's), so only the command's option beats it."""

_REPOSITORY_SCOPES = frozenset({"local", "worktree"})

_COMMAND_KEYS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.DOTALL), neutral)
    for pattern, neutral in (
        (r"filter\..+\.(clean|smudge|process)", ""),
        (r"filter\..+\.required", "false"),
        (r"diff\..+\.(textconv|command)", ""),
        (r"merge\..+\.driver", "false"),
        (r"core\.pager|pager\..+", "cat"),
        (r"core\.editor|sequence\.editor", "true"),
        (r"core\.sshcommand", "ssh"),
        (r"core\.(askpass|gitproxy|alternaterefscommand)", ""),
        (r"interactive\.difffilter", ""),
        (r"gpg\.program", "gpg"),
        (r"gpg\.ssh\.program", "ssh-keygen"),
        (r"gpg\.x509\.program", "gpgsm"),
        (r"gpg\.openpgp\.program", "gpg"),
    )
)
"""Command-valued keys (as git lists them: section and name lowercased) and a harmless value."""
_LIST_KEY = re.compile(r"credential(\..+)?\.helper", re.DOTALL)
"""Multi-valued: an empty value resets the list, then the user's own helpers are added back."""

SAFE_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "GIT_EDITOR": "true"}
"""Environment for every git call: no prompt on a terminal, no pager, no editor."""


def _entries(listing: bytes) -> list[tuple[str, str, str]]:
    """(scope, key, value) of a `LIST_CONFIG` listing; a key without `=` has value ""."""
    parts = listing.decode("utf-8", errors="surrogateescape").split("\0")
    entries = []
    for scope, entry in zip(parts[0::2], parts[1::2], strict=False):
        key, _, value = entry.partition("\n")
        entries.append((scope, key, value))
    return entries


def _neutral(key: str) -> str | None:
    return next((value for pattern, value in _COMMAND_KEYS if pattern.fullmatch(key)), None)


def overrides(listing: bytes) -> list[str]:
    """`-c` arguments that undo every command the repository's own config names.

    A single-valued key takes the user's last value if they set one, else a harmless value; a
    credential helper list is reset and refilled with the user's helpers, in their order.
    """
    entries = _entries(listing)
    hostile = {k for scope, k, _ in entries if scope in _REPOSITORY_SCOPES}
    args: list[str] = []
    for key in sorted(hostile):
        user = [v for scope, k, v in entries if k == key and scope not in _REPOSITORY_SCOPES]
        if _LIST_KEY.fullmatch(key):
            args += ["-c", f"{key}="] + [a for v in user for a in ("-c", f"{key}={v}")]
        elif (neutral := _neutral(key)) is not None:
            args += ["-c", f"{key}={user[-1] if user else neutral}"]
    return args


def command_args(args: Sequence[str]) -> list[str]:
    """`args` with `PATCH_OPTIONS` after a subcommand that can print a patch, and the
    `REMOTE_OPTIONS` of one that talks to a remote."""
    index = 0
    while index < len(args) and args[index].startswith("-"):
        index += 2 if args[index] == "-c" else 1
    if index >= len(args):
        return list(args)
    command = args[index]
    extra = PATCH_OPTIONS if command in PATCH_COMMANDS else REMOTE_OPTIONS.get(command, ())
    return [*args[: index + 1], *extra, *args[index + 1 :]]


def safe_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """`base` (default: this process's environment) with `SAFE_ENV` on top."""
    return {**(os.environ if base is None else base), **SAFE_ENV}


REPO_LOCATION_VARS = frozenset(
    {
        "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX", "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE",
        "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN",
    }
)  # fmt: skip
"""Variables that would point git at another repository (a hook's, a caller's) or leak the key."""


def git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of every git call: ours without `REPO_LOCATION_VARS`, never prompting,
    never opening an editor, `extra` on top, and `SAFE_ENV` over all."""
    env = {k: v for k, v in os.environ.items() if k not in REPO_LOCATION_VARS}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", LC_ALL="C", GIT_EDITOR="true")
    return safe_env({**env, **(extra or {})})


def safe_argv(cwd: Path, *args: str) -> list[str]:
    """The full argv of `git args` in `cwd`, for the few callers that run git synchronously."""
    listing = subprocess.run(
        ["git", "-C", str(cwd), *BASE_CONFIG, *LIST_CONFIG],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        env=safe_env(),
        timeout=30,
        check=False,
    ).stdout
    return ["git", "-C", str(cwd), *BASE_CONFIG, *overrides(listing), *command_args(args)]


def tracked(cwd: Path, folder: str) -> frozenset[Path]:
    """The files under `cwd/folder` that git tracks (absolute); empty outside a repository.

    cardrunner's state folder ignores itself, so anything in it that git tracks came with the
    repository's files — a cloned run log, process ledger or worktree — and is not cardrunner's.
    """
    try:
        out = subprocess.run(
            safe_argv(cwd, "ls-files", "-z", "--full-name", "--", folder),
            capture_output=True,
            stdin=subprocess.DEVNULL,
            env=safe_env(),
            timeout=30,
            check=False,
        )
        top = subprocess.run(
            safe_argv(cwd, "rev-parse", "--show-toplevel"),
            capture_output=True,
            stdin=subprocess.DEVNULL,
            env=safe_env(),
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    if out.returncode != 0 or top.returncode != 0:
        return frozenset()
    root = Path(top.stdout.decode("utf-8", errors="surrogateescape").strip())
    names = out.stdout.decode("utf-8", errors="surrogateescape").split("\0")
    return frozenset(root / name for name in names if name)


def committed_blob(cwd: Path, path: Path) -> bytes | None:
    """`path` (under `cwd`) as the commit at HEAD stores it — no filter runs (`cat-file`, as
    `GitRepo.show_file`, for the callers that cannot await); None when HEAD has no such file."""
    try:
        rel = path.relative_to(cwd.resolve()).as_posix()
        out = subprocess.run(
            safe_argv(cwd, "cat-file", "blob", f"HEAD:./{rel}"),
            capture_output=True,
            stdin=subprocess.DEVNULL,
            env=safe_env(),
            timeout=30,
            check=False,
        )
    except (ValueError, OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None
