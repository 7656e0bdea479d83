"""The repository's own commit hooks, run by the runner as the build is: in the sandbox.

Git never runs a hook for cardrunner (git/safety.py turns them off: a `.git/` that arrives with
the code must run nothing when a folder is opened or read). But a project that set up pre-commit
and commit-msg hooks (husky, the pre-commit framework, a Gerrit Change-Id) expects every commit to
pass them, and a commit made with plumbing would skip them silently. So before the review the
runner runs them itself, like its build: the same sandbox, environment, process ledger and
timeout, on the tree about to be committed (a temporary index holds it, `GIT_INDEX_FILE`, so
`git diff --cached` in a hook shows exactly the run's changes), and a failure goes back to the
model as `git_commit`'s result. A commit-msg hook may edit the message, as with git.
`[git] hooks = false` skips them; they are the repository's code, so trusting it covers them.

Git finds hooks wherever `core.hooksPath` says, and teams keep secret scanners in a folder of
their own (in the home, a shared folder): a folder outside the repository is shown read-only to
the hook's sandbox, as git would find it, instead of every commit failing with bwrap's
"execvp … No such file".
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from cardrunner.git.repo import GitRepo
from cardrunner.processes.command import CommandResult, run_command
from cardrunner.verify.builds import RunnerChecks

HOOKS = ("pre-commit", "commit-msg")
"""The hooks a commit runs before it exists, in git's order; the others (post-commit, …)
would only report on a commit already made."""
_TAIL_LINES = 15


@dataclass(frozen=True)
class HookOutcome:
    """What the hooks said about one commit."""

    ok: bool
    message: str
    """The commit message, as the commit-msg hook left it."""
    report: str = ""
    """For the model when a hook failed: which one, its exit and its last lines."""


@dataclass
class CommitHooks:
    """The pre-commit and commit-msg hooks of the repository `git` works in."""

    git: GitRepo
    checks: RunnerChecks
    """The runner's checks: hooks run with their sandbox, environment, ledger and timeout."""
    scratch: Path
    """A folder the sandbox shows and lets write (the run's folder): index and message go here."""

    async def run(self, message: str, tree: str) -> HookOutcome:
        """Run the hooks on `tree` with `message`; the first that fails decides."""
        folder = await self.git.hooks_folder()
        present = [n for n in HOOKS if await asyncio.to_thread(_runnable, folder / n)]
        if not present:
            return HookOutcome(True, message)
        top = await self.git.toplevel()
        sandbox = self.checks.sandbox
        shown = await asyncio.to_thread(folder.resolve)
        if not shown.is_relative_to(await asyncio.to_thread(top.resolve)):
            sandbox = replace(sandbox, read=(*sandbox.read, shown))  # read-only, as git sees it
        await asyncio.to_thread(self.scratch.mkdir, parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="hooks-", dir=self.scratch) as tmp:
            index, text = Path(tmp) / "index", Path(tmp) / "COMMIT_EDITMSG"
            await self.git.write_index(index, tree)
            await asyncio.to_thread(text.write_text, message + "\n", encoding="utf-8")
            for name in present:
                args = [str(text)] if name == "commit-msg" else []
                result = await run_command(
                    [str(folder / name), *args],
                    top,
                    self.checks.commands.timeout_seconds,
                    {**(self.checks.env or {}), "GIT_INDEX_FILE": str(index)},
                    groups=self.checks.groups,
                    sandbox=sandbox,
                )
                if not result.ok:
                    return HookOutcome(False, message, _report(name, folder / name, result))
            edited = (await asyncio.to_thread(text.read_text, encoding="utf-8")).strip()
        return HookOutcome(True, edited or message)


def _runnable(path: Path) -> bool:
    """Git runs a hook only when it is an executable file; so do we."""
    return path.is_file() and os.access(path, os.X_OK)


def _report(name: str, path: Path, result: CommandResult) -> str:
    lines = [line.rstrip() for line in (result.spawn_error or result.output).splitlines()]
    tail = "\n".join(line for line in lines if line.strip())
    tail = "\n".join(tail.splitlines()[-_TAIL_LINES:]) or "(no output)"
    why = "timed out and was killed" if result.timed_out else f"exit {result.exit_code}"
    return (
        f"The repository's {name} hook ({path}) refused this commit ({why}):\n{tail}\n"
        "Nothing was committed and the user was not asked. Fix what the hook says (for "
        "commit-msg: the message), then call git_commit again."
    )
