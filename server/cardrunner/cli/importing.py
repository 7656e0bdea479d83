"""`cardrunner import github OWNER/REPO` and `import vibe-kanban PATH`: work as cards, once.

Work already tracked as issues, or on a Vibe Kanban board, should not have to be typed again.
One card per issue (sources/issues.py says what goes in it) or task (sources/vibekanban.py) is
written into the cards folder; one imported before — a card with its link as `source:` — is
left alone, so the import can run on a schedule or from a workflow. Exit status: 0 the import
went through (even if nothing was new), 1 the source refused or failed, 2 usage.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from cardrunner.board.github import GitHub, GitHubError, find_token
from cardrunner.cli.exiting import EXIT_DONE, EXIT_FAILED, EXIT_USAGE, Subparsers, err
from cardrunner.config.loading import load_settings
from cardrunner.config.paths import BACKLOG_TASKS, find_root
from cardrunner.sources.issues import import_issues
from cardrunner.sources.vibekanban import VibeKanbanError, import_tasks, read_tasks

_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")


def add_parser(sub: Subparsers) -> None:
    """Register `import github` and its selection."""
    importing = sub.add_parser("import", help="make cards from another tracker's work")
    sources = importing.add_subparsers(dest="source", required=True, metavar="SOURCE")
    github = sources.add_parser(
        "github",
        help="one card per GitHub issue (by label, by number, or all open)",
        epilog="The token comes from GITHUB_TOKEN, GH_TOKEN or `gh auth token`; GITHUB_API_URL "
        "points at GitHub Enterprise. Exit status: 0 imported, 1 GitHub failed, 2 usage.",
    )
    github.add_argument("repo", metavar="OWNER/REPO", help="the repository whose issues to import")
    which = github.add_mutually_exclusive_group(required=True)
    which.add_argument("--label", help="the open issues with this label")
    which.add_argument("--number", type=int, help="this one issue")
    which.add_argument("--all-open", action="store_true", help="every open issue")
    github.set_defaults(verb=run)
    vibe = sources.add_parser(
        "vibe-kanban",
        help="one card per task of a Vibe Kanban database (read-only)",
        epilog="PATH is Vibe Kanban's db.sqlite or db.v2.sqlite (~/.local/share/vibe-kanban/ on "
        "Linux). Exit status: 0 imported, 1 the file cannot be read, 2 usage.",
    )
    vibe.add_argument("path", type=Path, metavar="PATH", help="the SQLite database file")
    vibe.add_argument("--project", help="the project to import (needed when it has several)")
    vibe.set_defaults(verb=run_vibe_kanban)


def _cards_folder() -> tuple[Path, Path] | None:
    """The repository and its cards folder; None (said on stderr) for a Backlog.md board."""
    root = find_root(Path.cwd())
    settings, _ = load_settings(root)
    if settings.cards == BACKLOG_TASKS:
        err(
            "cardrunner import: this is a Backlog.md board; import into it with `backlog`, "
            "or set `cards` in cardrunner.toml to a folder of cardrunner cards"
        )
        return None
    return root, root / settings.cards


def run(args: argparse.Namespace) -> int:
    """Fetch the chosen issues and write the cards that are new."""
    if not _REPO.fullmatch(args.repo):
        err(f"cardrunner import: {args.repo!r} is not OWNER/REPO")
        return EXIT_USAGE
    where = _cards_folder()
    if where is None:
        return EXIT_USAGE
    root, folder = where
    client = GitHub(token=find_token())
    base = f"/repos/{args.repo}/issues"
    try:
        if args.number is not None:
            issues = [client.get(f"{base}/{args.number}")]
        else:
            params = {"state": "open", "per_page": "100"}
            issues = client.get_all(
                base, {**params, **({"labels": args.label} if args.label else {})}
            )
    except GitHubError as error:
        err(f"cardrunner import: {error}")
        return EXIT_FAILED
    for seconds in client.waited:
        err(f"waited {seconds:.0f} s for GitHub's rate limit")
    done = import_issues(issues, folder)
    for path in done.written:
        print(f"wrote {path.relative_to(root)}")
    for number, notes in done.cleaned:  # what the maintainer did not see on GitHub
        err(f"issue #{number}: {notes}")
    for number, why in done.skipped:
        err(f"issue #{number} not imported: {why}")
    print(
        f"{len(done.written)} new card(s); {len(done.known)} issue(s) already imported"
        + (f"; {len(done.skipped)} left out" if done.skipped else "")
    )
    return EXIT_DONE


def run_vibe_kanban(args: argparse.Namespace) -> int:
    """Read the database's tasks (of one project) and write the cards that are new."""
    where = _cards_folder()
    if where is None:
        return EXIT_USAGE
    root, folder = where
    try:
        tasks = read_tasks(args.path)
    except VibeKanbanError as error:
        err(f"cardrunner import: {error}")
        return EXIT_FAILED
    projects = sorted({task.project for task in tasks})
    if args.project is not None:
        tasks = [task for task in tasks if task.project == args.project]
        if not tasks:
            err(f"cardrunner import: no tasks in a project {args.project!r}; projects: {projects}")
            return EXIT_USAGE
    elif len(projects) > 1:
        err(
            f"cardrunner import: the database has several projects; choose one with --project: {projects}"
        )
        return EXIT_USAGE
    done = import_tasks(tasks, folder)
    for path in done.written:
        print(f"wrote {path.relative_to(root)}")
    for path in done.without_criteria:
        err(f"{path.relative_to(root)} has no acceptance criteria: add them before running it")
    print(f"{len(done.written)} new card(s); {len(done.known)} task(s) already imported")
    return EXIT_DONE
