"""The push job of a CI run ("safe outputs"): check a run's git bundle, then push it.

The job that runs the model holds only the model key: no token that can push, no credentials
in `.git/config`. It hands its commits over as a git bundle, and a separate job, which holds
the write token but never runs the model or the model's code, calls `check_bundle` and only
then `publish`. What the model wrote is data to this job: nothing in the bundle is checked
out, built or run, and its rules come from the base commit, never from the bundle:

- one head, `refs/heads/cards/<slug>`, the card's branch (and, when the workflow names the
  branch, that one); its commits sit in a line on exactly the base the job started from, no
  merges, at most `Limits.commits` of them;
- every path any of those commits touches is inside the write area of the repository's
  settings *as committed on the base* (cardrunner.toml, pyproject.toml's [tool.cardrunner]),
  or is the branch's own card file (a Markdown file in the base's cards folder); never a
  workflow or other CI file, never cardrunner's own settings (a continued run would read
  them), `.gitmodules` or `.gitattributes`; only ordinary files (no symlinks, no submodules);
- the sizes: files, bytes a file and bytes in all.

A refusal names the commit and the file. `publish` pushes the checked tip to the card's
branch without force (a new branch, or a fast-forward of the reviewed head) with git's own
safe options and `--` before every value (a remote or branch is never read as an option).
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from cardrunner.card.card import card_slug, parse_card
from cardrunner.config.loading import repository_settings
from cardrunner.config.paths import BACKLOG_CONFIG, BACKLOG_TASKS
from cardrunner.git.process import GitOut
from cardrunner.git.repo import GitError, GitRepo

CARD_BRANCH = re.compile(r"cards/[a-z0-9]+(?:-[a-z0-9]+)*-[0-9a-f]{8}")
"""What `card_slug` makes, behind `cards/`: nothing else is a card's branch."""

SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")

CI_PATHS = (
    ".github/",
    ".gitlab/",
    ".gitlab-ci.yml",
    ".circleci/",
    ".travis.yml",
    ".azure-pipelines/",
    "azure-pipelines.yml",
    ".buildkite/",
    "bitbucket-pipelines.yml",
    ".drone.yml",
    ".woodpecker/",
    ".woodpecker.yml",
    "jenkinsfile",
    ".cirrus.yml",
    "appveyor.yml",
    ".appveyor.yml",
    ".pre-commit-config.yaml",
    ".gitmodules",
    ".gitattributes",
    "cardrunner.toml",
    ".cardrunner/",
    ".mcp.json",
)
"""Paths no card's commit may touch, compared case-folded: a workflow on a pushed branch runs
with the repository's secrets; git's own files change what a checkout does; cardrunner's
settings would be what the next (continued) run trusts. A prefix ending in `/` is a folder."""

SETTINGS_FILES = ("cardrunner.toml", "pyproject.toml", ".mcp.json")
"""The files `repository_settings` reads: taken from the base commit, nothing else."""


@dataclass(frozen=True)
class Limits:
    """How much one CI run may hand to the push job."""

    commits: int = 5
    files: int = 200
    file_bytes: int = 1_000_000
    total_bytes: int = 5_000_000


class BundleRefused(Exception):
    """The bundle breaks a rule; the message names the rule, and the commit and file."""


@dataclass
class CheckedBundle:
    """A bundle that passed: its branch, its tip, its commits (oldest first) and paths."""

    branch: str
    tip: str
    base: str
    commits: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    card: str = ""
    """The card file the commits carry (repository-relative), "" when they do not touch it."""
    title: str = ""
    """The card's title at the tip, one line (the pull request's title), "" without a card."""


def is_ci_path(path: str) -> bool:
    """Whether `path` (repository-relative, POSIX) is a CI or settings file no card may touch."""
    folded = path.casefold()
    name = PurePosixPath(folded).name
    for entry in CI_PATHS:
        if entry.endswith("/") and (folded + "/").startswith(entry):
            return True
        if not entry.endswith("/") and (
            folded == entry or (entry == "jenkinsfile" and name == entry)
        ):
            return True
    return False


def in_area(path: str, folders: list[str]) -> bool:
    """Whether `path` is inside one of the write area's folders (`.` is the whole repository)."""
    parts = PurePosixPath(path).parts
    for folder in folders:
        own = [p for p in PurePosixPath(folder.replace("\\", "/")).parts if p not in (".", "")]
        if ".." in own:
            continue  # an area outside the repository holds no file of it
        if tuple(own) == parts[: len(own)]:
            return True
    return False


class BundleRepo(GitRepo):
    """The push job's checkout: the base is here; the bundle is fetched into a quarantine ref."""

    async def text(self, *args: str) -> str:
        return (await self._git(*args)).text

    async def attempt(self, *args: str) -> GitOut:
        """The command's outcome, not raised: the caller words the refusal."""
        return await self._git(*args, check=False)

    async def raw(self, *args: str) -> bytes:
        return (await self._git(*args)).stdout

    async def holds(self, commit: str) -> bool:
        """Whether `commit` is HEAD's or a branch's history here, not only a fetched bundle's."""
        if (await self.attempt("merge-base", "--is-ancestor", commit, "HEAD")).code == 0:
            return True
        refs = ("refs/heads", "refs/remotes")
        out = await self.attempt("for-each-ref", "--count=1", "--contains", commit, *refs)
        return out.code == 0 and bool(out.text)

    async def settings_at(self, commit: str) -> tuple[list[str], str]:
        """The write area and the cards folder as the repository's settings at `commit` have
        them (a Backlog.md board's tasks when it has one and no `cards` setting)."""
        with tempfile.TemporaryDirectory(prefix="cardrunner-base-") as folder:
            for name in SETTINGS_FILES:
                out = await self._git("cat-file", "blob", f"{commit}:{name}", check=False)
                if out.code == 0:
                    (Path(folder) / name).write_bytes(out.stdout)
            settings = repository_settings(Path(folder))
        cards = settings.cards
        if "cards" not in settings.model_fields_set:
            board = await self._git("cat-file", "-e", f"{commit}:{BACKLOG_CONFIG}", check=False)
            cards = BACKLOG_TASKS if board.code == 0 else cards
        return list(settings.paths.write), cards


async def check_bundle(
    root: Path, bundle: Path, base: str, branch: str | None = None, limits: Limits | None = None
) -> CheckedBundle:
    """The bundle's branch, checked against the rules above; BundleRefused if any breaks."""
    limits = limits or Limits()
    repo = BundleRepo(root)
    if not SHA.fullmatch(base):
        raise BundleRefused(f"the base {base!r} is not a full commit id")
    if branch is not None and not CARD_BRANCH.fullmatch(branch):
        raise BundleRefused(f"{branch!r} is not a card's branch (cards/<slug>)")
    if not await repo.holds(base):
        raise BundleRefused(
            f"the base {base[:10]} is not in this checkout's history (its HEAD or branches); "
            "a bundle cannot bring its own base"
        )
    source = str(bundle)  # absolute (the CLI resolves it): git runs in the checkout
    verified = await repo.attempt("bundle", "verify", "-q", "--", source)
    if verified.code != 0:
        raise BundleRefused(
            f"{bundle.name} is not a bundle this checkout can take: {verified.stderr}"
        )
    heads = (await repo.text("bundle", "list-heads", "--", source)).splitlines()
    names = [line.split(" ", 1)[1] for line in heads if " " in line]
    if len(names) != 1 or not names[0].startswith("refs/heads/"):
        raise BundleRefused(f"the bundle must hold exactly one branch; it holds {names or 'none'}")
    found = names[0].removeprefix("refs/heads/")
    if not CARD_BRANCH.fullmatch(found):
        raise BundleRefused(f"the bundle's branch {found!r} is not a card's branch (cards/<slug>)")
    if branch is not None and found != branch:
        raise BundleRefused(f"the bundle's branch is {found}, not the card's branch {branch}")
    quarantine = f"refs/cardrunner/incoming/{found}"
    await repo.text("fetch", "-q", "--no-tags", "--", source, f"+{names[0]}:{quarantine}")
    tip = await repo.text("rev-parse", "--verify", "-q", f"{quarantine}^{{commit}}")
    checked = CheckedBundle(branch=found, tip=tip, base=base)
    await _check_line(repo, checked, limits)
    area, cards = await repo.settings_at(base)
    await _check_paths(repo, checked, area, cards, limits)
    return checked


async def _check_line(repo: BundleRepo, checked: CheckedBundle, limits: Limits) -> None:
    """The commits: a line of ordinary commits whose oldest's parent is the base."""
    lines = (
        await repo.text("rev-list", "--reverse", "--parents", checked.tip, f"^{checked.base}", "--")
    ).splitlines()
    if not lines:
        raise BundleRefused(
            f"{checked.branch} has no commit on top of the base {checked.base[:10]}"
        )
    if len(lines) > limits.commits:
        raise BundleRefused(f"{checked.branch} has {len(lines)} commits; at most {limits.commits}")
    parent = checked.base
    for line in lines:
        sha, *parents = line.split()
        if parents != [parent]:
            raise BundleRefused(
                f"commit {sha[:10]} does not follow {parent[:10]} alone: the branch must be a "
                f"line of commits on the base {checked.base[:10]} the job started from"
            )
        checked.commits.append(sha)
        parent = sha


async def _check_paths(
    repo: BundleRepo, checked: CheckedBundle, area: list[str], cards: str, limits: Limits
) -> None:
    """Every path every commit touches: where it is, what it is and how big. The card's own
    file is the Markdown file in the cards folder whose slug names the branch (a branch name
    alone must not make any other path "the card")."""
    slug = checked.branch.removeprefix("cards/")
    touched: dict[str, str] = {}  # path -> the blob it has last, "" when deleted
    for sha in checked.commits:
        raw = await repo.raw("diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", sha)
        fields = raw.decode("utf-8", "surrogateescape").split("\0")
        for meta, path in zip(fields[0::2], fields[1::2], strict=False):
            if not meta.startswith(":"):
                continue
            _, new_mode, _, blob, status = meta[1:].split(" ")
            where = f"commit {sha[:10]} {'deletes' if status == 'D' else 'writes'} {path}"
            if is_ci_path(path):
                raise BundleRefused(
                    f"{where}: a workflow, CI or settings file; no card may touch it"
                )
            own_card = (
                path.endswith(".md")
                and in_area(path, [cards])
                and card_slug(repo.root / path, repo.root) == slug
            )
            if not own_card and not in_area(path, area):
                raise BundleRefused(
                    f"{where}: outside the write area {area} (the base's settings) and not "
                    f"the card {checked.branch} belongs to"
                )
            if status != "D" and new_mode not in ("100644", "100755"):
                kind = {"120000": "a symlink", "160000": "a submodule"}.get(new_mode, new_mode)
                raise BundleRefused(f"{where} as {kind}; only ordinary files are taken")
            if own_card:
                checked.card = path
            touched[path] = "" if status == "D" else blob
    if len(touched) > limits.files:
        raise BundleRefused(f"the commits touch {len(touched)} files; at most {limits.files}")
    total = 0
    for path, blob in touched.items():
        size = int(await repo.text("cat-file", "-s", blob)) if blob else 0
        if size > limits.file_bytes:
            raise BundleRefused(f"{path} is {size} bytes; at most {limits.file_bytes} a file")
        total += size
    if total > limits.total_bytes:
        raise BundleRefused(f"the files come to {total} bytes; at most {limits.total_bytes}")
    checked.paths = sorted(touched)
    if checked.card and touched[checked.card]:
        text = await repo.raw("cat-file", "blob", touched[checked.card])
        checked.title = _title(text, repo.root / checked.card)


def _title(text: bytes, path: Path) -> str:
    """The card's title as one printable line of at most 200 characters (the pull request's
    title: never a second line, a control character or an option)."""
    card, _ = parse_card(text.decode("utf-8", "replace"), path)
    title = card.title if card is not None else ""
    return " ".join("".join(c if c.isprintable() else " " for c in title).split())[:200]


async def publish(root: Path, checked: CheckedBundle, remote: str) -> None:
    """Push the checked tip to the card's branch on `remote`, never forced."""
    if remote.startswith("-"):
        raise BundleRefused(f"the remote {remote!r} starts with '-'; it would be read as an option")
    repo = BundleRepo(root)
    refspec = f"{checked.tip}:refs/heads/{checked.branch}"
    out = await repo.attempt("push", "--porcelain", "--", remote, refspec)
    if out.code != 0:
        raise GitError(f"git push to {remote!r} failed: {out.stderr or out.text}")
