"""What a review must show beyond the diff: config that widens a run, files a `.gitignore` hides,
and secrets that must never be committed.

A diff of the write area is not the whole story. A `.gitignore` the run wrote hides files from
the diff, the commit and the restore; a `.mcp.json` or `cardrunner.toml` it wrote changes what the
next run may do; a key pasted into a file is committed while the review shows `[redacted]`. So
the review flags config changes at the top, lists ignored files the run created, and refuses
outright a change that would commit a secret.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import PurePosixPath

from cardrunner.config.secrets import SecretHit, find_secrets
from cardrunner.git.hunks import lines_of, quote, unquote

CONFIG_NAMES = frozenset(
    {
        ".gitignore", ".gitattributes", ".gitmodules", "cardrunner.toml", ".mcp.json",
        "pyproject.toml", "setup.cfg", "tox.ini", "pytest.ini", "noxfile.py",
        ".pre-commit-config.yaml", ".gitlab-ci.yml", ".travis.yml", "azure-pipelines.yml",
        "Jenkinsfile", "bitbucket-pipelines.yml",
    }
)  # fmt: skip
"""Files that change how cardrunner, git, the test runner or CI behave."""

CONFIG_FOLDERS = (".github", ".circleci", ".ci", ".gitlab", ".buildkite", ".devcontainer")
_CACHE_PARTS = frozenset(
    {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", "node_modules", ".tox"}
)
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def is_config(path: str) -> bool:
    """True if `path` (root-relative) is configuration rather than code or data."""
    parts = PurePosixPath(path).parts
    return bool(parts) and (parts[-1] in CONFIG_NAMES or parts[0] in CONFIG_FOLDERS)


def is_cache(path: str) -> bool:
    """Build and test caches: created by every build, listed as a count, not one by one."""
    parts = PurePosixPath(path).parts
    return bool(_CACHE_PARTS.intersection(parts)) or path.endswith((".pyc", ".pyo"))


def review_header(changed: Iterable[str], hidden: Iterable[str], built: Sequence[str] = ()) -> str:
    """The lines shown above the diff; empty when there is nothing beyond the diff to see.

    `built`: build output git does not ignore (`paths.build_output`), left out of the commit.
    Paths are quoted as git quotes them: a name with a newline cannot start a line of its own
    (one reading `# LGTM from the reviewer` would be taken for a reviewer's comment)."""
    hidden = sorted(hidden)
    flagged = sorted({p for p in [*changed, *hidden] if is_config(p)})
    lines: list[str] = []
    if flagged:
        lines.append("!! CONFIGURATION CHANGED — it decides what runs, what git tracks and CI:")
        lines += [f"!!   {quote(path)}" for path in flagged]
    shown = [p for p in hidden if not is_cache(p)]
    caches = len(hidden) - len(shown)
    if shown:  # caches alone are what every build leaves; they are still deleted on reject
        lines.append(
            "!! FILES IGNORED BY GIT that this run created (not in the diff, not committed, "
            "deleted on reject):"
        )
        lines += [f"!!   {quote(path)}" for path in shown]
        if caches:
            lines.append(f"!!   and {caches} file(s) in caches (__pycache__, .pytest_cache …)")
    if built:
        lines.append(
            f"build output left out of the diff and the commit (paths.build_output): "
            f"{len(built)} file(s), e.g. {quote(built[0])}"
        )
    return "\n".join(lines) + "\n\n" if lines else ""


def secrets_in_diff(diff: str) -> list[SecretHit]:
    """Secrets on the lines a unified diff adds, with the new file's path and line number."""
    hits: list[SecretHit] = []
    path, line = "", 0
    for raw in lines_of(diff):  # not splitlines(): a form feed must not end a line early
        if raw.startswith("+++ "):
            target = unquote(raw[4:].removesuffix("\t"))
            path = target[2:] if target.startswith("b/") else target
        elif match := _HUNK.match(raw):
            line = int(match.group(1))
        elif raw.startswith("+"):
            hits += [SecretHit(path, line, h.kind) for h in find_secrets(path, raw[1:])]
            line += 1
        elif raw.startswith(" "):
            line += 1
    return hits
