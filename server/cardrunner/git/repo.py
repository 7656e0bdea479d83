"""The git port: snapshot, diff, commit and restore exactly the folders a run may write.

A run must be reviewable and reversible without disturbing the user's own work in the same
repository. So snapshots and commits are built in a *temporary* index (`GIT_INDEX_FILE`): the
user's staging area is never used to prepare anything, untracked files are included (a run that
creates a file must show it in the diff and be able to remove it again), ignored files are left
alone, and every operation is limited to the given paths. Every call is a git process started
and awaited off the event loop (`git/process.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from collections.abc import AsyncIterator, Sequence
from pathlib import Path, PurePosixPath

from cardrunner.card.record import unclosing
from cardrunner.config.paths import STATE_DIR
from cardrunner.config.secrets import visible
from cardrunner.git.indexes import STAT_CONFIG, fill_index
from cardrunner.git.process import GitOut, run_git
from cardrunner.git.safety import BASE_CONFIG, LIST_CONFIG, command_args, git_env, overrides

_FALLBACK_IDENTITY = (
    ("user.name", "NAME", "cardrunner"),
    ("user.email", "EMAIL", "cardrunner@localhost"),
)


class GitError(Exception):
    """A git command failed; the message carries git's own words.

    Not a tool error: git is a layer below the tools, and a tool that lets one through is
    answered with this message as it is (`tools.base.FunctionTool`).
    """


def not_option(value: str, what: str) -> str:
    """`value`, or GitError when git would read it as an option: a remote, branch or commit can
    come from a flag, a card or a workflow input, and `--upload-pack=<cmd>` as a remote runs
    <cmd>. Values also go after `--` where git allows it; this refuses, saying why, elsewhere."""
    if value.startswith("-") or "\0" in value or "\n" in value:
        why = (
            "starts with '-', which git reads as an option" if value[:1] == "-" else "has a NUL/LF"
        )
        raise GitError(f"refused the {what} {value!r}: it {why}")
    return value


def _specs(paths: Sequence[str], exclude: Sequence[str] = ()) -> list[str]:
    """Pathspecs that mean exactly these paths (taken literally), relative to the workspace.

    `.cardrunner/` (run logs, worktrees) is excluded even when a path is the whole workspace, and
    so are the `exclude` globs (build output); by a glob, because an exclude that names a
    gitignored folder makes `git add` fail.
    """
    if not paths:
        raise ValueError("no paths given: refusing to act on the whole repository")
    excluded = [f"**/{STATE_DIR}/**", *exclude]
    return [f":(literal){p}" for p in paths] + [f":(exclude,glob){g}" for g in excluded]


class GitRepo:
    """The git repository that contains the workspace `root` (which may be a subfolder)."""

    def __init__(self, root: Path, build_output: Sequence[str] = ()) -> None:
        self.root = root
        self.build_output = tuple(build_output)
        """Globs of what builds write (`__pycache__` …): never a change, whether ignored or not."""
        self._own_index: Path | None = None

    def _specs(self, paths: Sequence[str]) -> list[str]:
        return _specs(paths, self.build_output)

    async def _git(
        self, *args: str, env: dict[str, str] | None = None, check: bool = True,
        data: bytes | None = None,
    ) -> GitOut:  # fmt: skip
        """Run `git args` in `root` with none of the repository's own commands (git/safety.py)."""
        full_env = git_env(env)
        listing = await self._spawn([*BASE_CONFIG, *LIST_CONFIG], full_env)
        quoting = ["-c", "core.quotePath=false"]  # names as bytes; git/hunks.py shows them
        argv = [*BASE_CONFIG, *quoting, *overrides(listing.stdout), *command_args(args)]
        out = await self._spawn(argv, full_env, data)
        if check and out.code != 0:
            command = next(a for a in args if not a.startswith("-") and "=" not in a)
            raise GitError(f"git {command} failed: {out.stderr or out.text}")
        return out

    async def _spawn(
        self, args: list[str], env: dict[str, str], data: bytes | None = None
    ) -> GitOut:
        try:
            return await run_git(["git", "-C", str(self.root), *args], env, data)
        except FileNotFoundError as exc:
            raise GitError("git is not installed or not on PATH") from exc

    @contextlib.asynccontextmanager
    async def _temp_index(self, tree: str | None) -> AsyncIterator[dict[str, str]]:
        """An index file of our own, filled from `tree` (None: empty); the user's stays put."""
        with tempfile.TemporaryDirectory(prefix="cardrunner-index-") as tmp:
            index = Path(tmp) / "index"
            env = {"GIT_INDEX_FILE": str(index)}
            if tree:
                await self.write_index(index, tree)
            else:
                await self._git("read-tree", "--empty", env=env)
            yield env

    async def is_repo(self) -> bool:
        """True if `root` is inside a git working tree (and git is installed)."""
        try:
            out = await self._git("rev-parse", "--is-inside-work-tree", check=False)
        except (GitError, OSError):
            return False
        return out.code == 0 and out.text == "true"

    async def head(self) -> str | None:
        """The commit HEAD points to; None in a repository without commits."""
        out = await self._git("rev-parse", "--verify", "-q", "HEAD^{commit}", check=False)
        return out.text if out.code == 0 else None

    async def branch(self) -> str | None:
        """The current branch name (also before the first commit); None when detached."""
        out = await self._git("symbolic-ref", "--short", "-q", "HEAD", check=False)
        return out.text if out.code == 0 else None

    async def shape(self) -> str:
        """What a run must say about this checkout: "HEAD detached at <sha>", "a shallow
        clone", both, or "" for a branch with its whole history."""
        notes = []
        if await self.branch() is None and (sha := await self.head()) is not None:
            notes.append(f"HEAD detached at {sha[:10]}")
        shallow = await self._git("rev-parse", "--is-shallow-repository", check=False)
        if shallow.code == 0 and shallow.text == "true":
            notes.append("a shallow clone")
        return ", ".join(notes)

    async def show_file(self, rev: str, path: str) -> bytes | None:
        """The bytes of `path` (relative to the workspace) in `rev` (a commit or a tree), as
        stored; None when it is not there. The review's before-copies are read this way."""
        spec = f"{not_option(rev, 'revision')}:./{path}"
        out = await self._git("cat-file", "blob", spec, check=False)  # no filter
        return out.stdout if out.code == 0 else None

    async def _prefix(self) -> str:
        return (await self._git("rev-parse", "--show-prefix")).text

    async def dirty_files(
        self, paths: list[str], ignored: bool = False, untracked: bool = True
    ) -> list[str]:
        """Modified, staged and (`untracked`) untracked files under `paths` (`ignored`: ignored
        ones too), build output left out."""
        if not paths:
            return []
        shown = "all" if untracked else "no"
        out = await self._git(
            "status", "--porcelain=v1", "-z", f"--untracked-files={shown}", "--no-renames",
            "--", *self._specs(paths),
        )  # fmt: skip
        prefix = await self._prefix()
        entries = [item[3:] for item in out.items()]
        found = {e[len(prefix) :] if e.startswith(prefix) else e for e in entries}
        if ignored:  # not `status --ignored`: with an exclude pathspec it lists every ignored
            found |= await self.ignored_files(paths)  # folder of the repository, named or not
        return sorted(found)

    async def build_output_files(self, paths: list[str]) -> list[str]:
        """Untracked files under `paths` git does not ignore but `build_output` names."""
        if not paths or not self.build_output:
            return []
        out = await self._git(
            "ls-files", "-z", "--others", "--exclude-standard", "--",
            *(f":(glob){g}" for g in self.build_output),
        )  # fmt: skip
        tops = [PurePosixPath(p) for p in paths]
        return [
            f
            for f in out.items()
            if any(str(t) == "." or PurePosixPath(f).is_relative_to(t) for t in tops)
        ]

    async def ignored_files(self, paths: list[str]) -> frozenset[str]:
        """Untracked files under `paths` that git ignores now, root-relative.

        A run can hide what it creates behind a `.gitignore` it writes: such files are in no
        diff and no snapshot, so the review lists them and a reject deletes them, by comparing
        this set at the review (or the end) with the one taken at run start.
        """
        if not paths:
            return frozenset()
        out = await self._git(
            "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--",
            *self._specs(paths),
        )  # fmt: skip
        return frozenset(out.items())

    async def ignored_tops(self) -> list[str]:
        """Top-level names under `root` that git ignores (`.venv`, `node_modules` …)."""
        return sorted({item.split("/", 1)[0] for item in await self.ignored_listing()})

    async def ignored_listing(self) -> list[str]:
        """What git ignores under `root`: files by path, wholly ignored folders as `name/`."""
        args = ("--others", "--ignored", "--exclude-standard", "--directory")
        return (await self._git("ls-files", "-z", *args)).items()

    async def remove_files(self, files: list[str], paths: list[str]) -> None:
        """Delete `files` (root-relative) and the folders below `paths` they leave empty."""
        await asyncio.to_thread(_remove_created, self.root, files, paths)

    async def _add_paths(self, paths: list[str], env: dict[str, str]) -> None:
        """`git add -A` the paths into the index of `env`; paths that match nothing are skipped."""
        exists = await asyncio.to_thread(lambda: [os.path.lexists(self.root / p) for p in paths])
        known = [p for p, e in zip(paths, exists, strict=True) if e]
        for path in (p for p, e in zip(paths, exists, strict=True) if not e):
            if (await self._git("ls-files", "-z", "--", *self._specs([path]), env=env)).stdout:
                known.append(path)  # deleted from the working tree but in the index
        if not known:
            return
        add = [*STAT_CONFIG, "add", "-A", "--", *self._specs(known)]
        out = await self._git(*add, env=env, check=False)
        # Naming an ignored folder makes git exit 1 after adding everything else: ignored files
        # are not part of a run's changes, so that is success here.
        if out.code != 0 and "ignored by one of your .gitignore files" not in out.stderr:
            raise GitError(f"git add failed: {out.stderr or out.text}")

    async def _tree_with(self, paths: list[str]) -> tuple[str, str | None]:
        """(tree of HEAD with the working tree's state under `paths`, HEAD)."""
        head = await self.head()
        async with self._temp_index(head) as env:
            await self._add_paths(paths, env)
            return (await self._git("write-tree", env=env)).text, head

    async def snapshot(self, paths: list[str]) -> str:
        """A tree id holding tracked and untracked (not ignored) files under `paths` as now."""
        return (await self._tree_with(paths))[0]

    async def diff_trees(self, old: str, new: str, paths: list[str]) -> tuple[bytes, list[str]]:
        """The diff from tree `old` to tree `new` under `paths` as git wrote it, byte for byte
        (`git apply` takes it back), and the files it names, unquoted."""
        common = ["--no-renames", "--relative", old, new, "--", *self._specs(paths)]
        names = await self._git("diff", "--name-only", "-z", *common)
        text = await self._git("diff", "--no-color", "--no-ext-diff", "--no-textconv", *common)
        return text.stdout, names.items()

    async def tree_without(self, tree: str, base_tree: str, files: list[str], patch: bytes) -> str:
        """`tree` with `files` put back as in `base_tree` and the hunks of `patch` undone: the
        tree a review's drops leave, built in an index of our own (nothing on disk changes)."""
        async with self._temp_index(tree) as env:
            if files:
                await self._git("reset", "-q", base_tree, "--", *self._specs(files), env=env)
            if patch:
                apply = ["apply", "--cached", "-R", "--whitespace=nowarn", "-"]
                await self._git(*apply, env=env, data=patch)
            return (await self._git("write-tree", env=env)).text

    async def checkout_tree(self, tree: str, dest: Path) -> Path:
        """Write every file of `tree` under `dest` (the user's index and files untouched); the
        folder there that stands for the workspace."""
        async with self._temp_index(tree) as env:
            await self._git("checkout-index", "-a", "-f", f"--prefix={dest}/", env=env)
        return dest / await self._prefix()

    async def _identity(self) -> list[str]:
        """`-c user.name=… -c user.email=…` for whatever the repository has no value for."""
        args: list[str] = []
        for key, suffix, fallback in _FALLBACK_IDENTITY:
            if os.environ.get(f"GIT_AUTHOR_{suffix}") and os.environ.get(f"GIT_COMMITTER_{suffix}"):
                continue
            if not (await self._git("config", "--get", key, check=False)).text:
                args += ["-c", f"{key}={fallback}"]
        return args

    async def commit(self, paths: list[str], message: str) -> str:
        """Commit exactly the changes under `paths` (nothing else the user staged); the sha.

        Built with plumbing, so commit hooks do not run. The user's index is then brought in
        line for `paths` only, so `git status` shows what it would after a normal commit.
        """
        return await self.commit_tree((await self._tree_with(paths))[0], paths, message)

    async def commit_tree(self, tree: str, paths: list[str], message: str) -> str:
        """Commit `tree` (HEAD's tree with `paths` as they should be) on HEAD; the sha.

        The message goes in on stdin: it may hold any character (a NUL cannot be an argument).
        """
        head = await self.head()
        parent_tree = (await self._git("rev-parse", f"{head}^{{tree}}")).text if head else None
        empty = head is None and not (await self._git("ls-tree", "--name-only", tree)).stdout
        if tree == parent_tree or empty:
            raise GitError(f"nothing to commit: no changes under {', '.join(paths)}")
        sha = await self._commit_object(tree, head, message)
        await self._git("reset", "-q", sha, "--", *self._specs(paths), check=False)
        return sha

    async def _commit_object(self, tree: str, head: str | None, message: str) -> str:
        """Write the commit of `tree` on `head` and move HEAD there; the sha.

        The message goes in on stdin with every control character but newline and tab written
        out (`config.secrets.visible`): quoted evidence may hold a NUL, which can be neither an
        argument nor part of a commit message a person reads safely.
        """
        message = unclosing(visible(message), note=False)  # no commit of ours closes an issue
        parents = ["-p", head] if head else []
        ident = await self._identity()
        data = message.encode("utf-8", errors="surrogateescape")
        sha = (await self._git(*ident, "commit-tree", tree, *parents, "-F", "-", data=data)).text
        subject = message.strip().split("\n", 1)[0]
        kind = "commit" if head else "commit (initial)"
        await self._git("update-ref", "-m", f"{kind}: {subject}", "HEAD", sha, head or "")
        return sha

    async def commit_content(self, path: str, content: bytes, message: str) -> str:
        """Commit `content` as `path` on top of HEAD, whatever the working tree holds; the sha.

        For a file whose committed text the caller computed (a card's new state): the user's
        unsaved or unrelated edits in the working file never slip into the commit. The user's
        index entry for `path` is brought in line, as after a normal commit of that file.
        """
        head = await self.head()
        if head is None:
            raise GitError("nothing to commit on: the repository has no commits")
        listed = (await self._git("ls-tree", head, "--", path)).text
        mode = listed.split(" ", 1)[0] if listed else "100644"
        with tempfile.TemporaryDirectory(prefix="cardrunner-blob-") as tmp:
            blob_file = Path(tmp) / "blob"
            await asyncio.to_thread(blob_file.write_bytes, content)
            blob = (await self._git("hash-object", "-w", f"--path={path}", str(blob_file))).text
        async with self._temp_index(head) as env:
            prefix = await self._prefix()
            entry = f"{mode},{blob},{prefix}{path}"
            await self._git("update-index", "--add", "--cacheinfo", entry, env=env)
            tree = (await self._git("write-tree", env=env)).text
        sha = await self._commit_object(tree, head, message)
        await self._git("reset", "-q", sha, "--", *self._specs([path]), check=False)
        return sha

    async def restore(self, base_tree: str, paths: list[str]) -> None:
        """Put the files under `paths` back to `base_tree`, byte for byte (index untouched)."""
        if not paths:
            return
        now = await self.snapshot(paths)
        common = ["--no-renames", "--relative", base_tree, now, "--", *self._specs(paths)]
        items = (await self._git("diff", "--name-status", "-z", *common)).items()
        changes = [(items[i], items[i + 1]) for i in range(0, len(items) - 1, 2)]
        created = [path for status, path in changes if status == "A"]
        await asyncio.to_thread(_remove_created, self.root, created, paths)
        restored = [path for status, path in changes if status != "A"]
        if restored:
            async with self._temp_index(base_tree) as env:
                await self._git("checkout-index", "-f", "-q", "--", *restored, env=env)

    async def write_index(self, index: Path, tree: str) -> None:
        """Fill `index` (never the repository's own) with exactly `tree`, keeping the stat data
        git has of files with the tree's content (`git/indexes.py`)."""
        if self._own_index is None:
            out = await self._git("rev-parse", "--path-format=absolute", "--git-path", "index")
            self._own_index = Path(out.text)
        await fill_index(self._git, self._own_index, index, tree)

    async def toplevel(self) -> Path:
        """The top folder of the working tree (where git runs hooks)."""
        return Path((await self._git("rev-parse", "--show-toplevel")).text)

    async def hooks_folder(self) -> Path:
        """Where the repository's hooks are: its own `core.hooksPath` (relative to the top of
        the working tree, as husky sets it) or the common git folder's `hooks/`.

        Read past the `core.hooksPath` this module sets on every call to keep git from running
        them: cardrunner runs the commit hooks itself, in the sandbox (verify/hooks.py)."""
        out = await self._git("config", "--show-scope", "--get-all", "core.hooksPath", check=False)
        pairs = [line.split("\t", 1) for line in out.text.splitlines() if "\t" in line]
        configured = [value for scope, value in pairs if scope != "command"]
        if configured and configured[-1]:
            folder = await asyncio.to_thread(os.path.expanduser, configured[-1])
            return await self.toplevel() / folder
        common = await self._git("rev-parse", "--path-format=absolute", "--git-common-dir")
        return Path(common.text) / "hooks"


def _remove_created(root: Path, created: list[str], paths: list[str]) -> None:
    """Delete files a run created, then folders below `paths` that became empty because of it."""
    tops = [Path(os.path.normpath(root / p)) for p in paths]
    folders: set[Path] = set()
    for rel in created:
        path = root / rel
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        folders.update(p for p in path.parents if any(p.is_relative_to(t) and p != t for t in tops))
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):
            folder.rmdir()  # only succeeds when empty
