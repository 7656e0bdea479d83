"""A repository whose `.git/` names commands: every one of them touches a marker file.

`arm` gives a committed repository an fsmonitor, a pager, an external diff, clean/smudge and
process filters, a textconv and merge driver, an ssh command, a credential helper and a hook for
every event git runs hooks on. `fire_plain_git` proves the payloads are real: plain git in an
armed copy touches markers. A test then drives cardrunner in an armed repository and asserts
`markers(...)` stayed empty.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

HOOKS = (
    "pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "post-checkout",
    "post-merge", "post-rewrite", "post-index-change", "reference-transaction", "pre-push",
    "pre-auto-gc", "pre-rebase", "fsmonitor-watchman",
)  # fmt: skip


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


def payload(folder: Path) -> Path:
    """A script that touches `folder/markers/<its first argument>`, then passes input on."""
    markers = folder / "markers"
    markers.mkdir(exist_ok=True)
    script = folder / "payload.sh"
    script.write_text(f'#!/bin/sh\ntouch "{markers}/$1"\nshift\nexec cat "$@"\n')
    script.chmod(0o755)
    return script


def arm(root: Path, outside: Path) -> Path:
    """Make the committed repository `root` hostile; payload and markers live in `outside`.

    Returns the markers folder. The `.gitattributes` that routes every file through the
    filters and drivers is committed, as a stranger's repository would ship it.
    """
    script = payload(outside)
    (root / ".gitattributes").write_text(
        "*.py filter=evil diff=evil merge=evil\n*.md filter=evilproc\n*.toml filter=evil\n"
    )
    _git(root, "add", ".gitattributes")
    _git(root, "commit", "-q", "-m", "attributes")
    config = {
        "core.fsmonitor": f"{script} fsmonitor",
        "core.pager": f"{script} pager",
        "core.sshCommand": f"{script} ssh",
        "core.askPass": f"{script} askpass",
        "diff.external": f"{script} external-diff",
        "filter.evil.clean": f"{script} clean",
        "filter.evil.smudge": f"{script} smudge",
        "filter.evil.required": "true",
        "filter.evilproc.process": f"{script} process",
        "diff.evil.textconv": f"{script} textconv",
        "diff.evil.command": f"{script} diff-command",
        "merge.evil.driver": f"{script} merge-driver",
        "credential.helper": f"!{script} credential",
        "gpg.program": f"{script} gpg",
        "pager.log": f"{script} pager-log",
    }
    for key, value in config.items():
        _git(root, "config", key, value)
    hooks = root / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    for name in HOOKS:
        hook = hooks / name
        hook.write_text(f'#!/bin/sh\n"{script}" hook-{name} </dev/null >/dev/null\n')
        hook.chmod(0o755)
    return outside / "markers"


def markers(folder: Path) -> list[str]:
    """The payloads that ran, by name."""
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def fire_plain_git(root: Path, folder: Path) -> list[str]:
    """Plain git in the armed `root`: the markers in `folder` it touched (the control)."""
    target = next(root.rglob("*.py"))
    target.write_text(target.read_text() + "# changed\n")
    card = next(root.rglob("*.md"))  # through the process filter
    card.write_text(card.read_text() + "changed\n")
    commands = (
        ["status"],
        ["diff"],
        ["-c", "diff.external=", "diff", "--no-ext-diff"],
        ["add", "-A"],
        ["commit", "-q", "-m", "plain"],
        ["checkout", "HEAD~1", "--", str(target.relative_to(root))],
        ["-p", "log", "-1"],
    )
    for args in commands:
        subprocess.run(["git", *args], cwd=root, capture_output=True, check=False, timeout=60)
    return markers(folder)
