"""`cardrunner run --ci`: the flags of a CI run, and how its outcome sets the exit status.

Only the wiring lives here; what a CI run does is `run/ci.py`. The exit status is a local
run's (0 Done, 1 Failed, 2 usage or configuration), with one addition: a card that ended Done
but whose branch could not be pushed exits 1, because the job did not deliver its pull request.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cardrunner.agent.review import Approver
    from cardrunner.run.ci import CardBranchRun
    from cardrunner.run.options import RunOptions


def add_ci_arguments(run: argparse.ArgumentParser, mode: argparse._MutuallyExclusiveGroup) -> None:
    """`--ci` is a review mode of its own (next to --yes and --no-commit), plus its options."""
    mode.add_argument(
        "--ci",
        action="store_true",
        help="run as a CI job: on a new branch cards/<slug>, one commit, pushed for a pull "
        "request (the review happens there); nothing is merged",
    )
    run.add_argument(
        "--remote",
        metavar="NAME|PATH",
        help="with --ci: the remote (a name, URL or path) to push the branch to (default: origin)",
    )
    run.add_argument(
        "--pr-body",
        type=Path,
        metavar="FILE",
        help="with --ci: write the pull request's Markdown body here (also when the card fails)",
    )


def ci_usage_error(args: argparse.Namespace) -> str | None:
    """Why the CI flags were given wrongly, or None."""
    if not args.ci and (args.remote is not None or args.pr_body is not None):
        return "--remote and --pr-body only go with --ci"
    if args.ci and args.resume:
        return "--ci starts a new branch; it cannot resume a run"
    return None


def ci_approver() -> Approver:
    from cardrunner.run.ci import PullRequestApprover

    return PullRequestApprover()


def ci_run(args: argparse.Namespace, options: RunOptions) -> CardBranchRun:
    """The CI run for these options; a remote that is an existing path is taken from here."""
    from cardrunner.run.ci import CardBranchRun, PushTarget

    remote = args.remote or "origin"
    if Path(remote).exists():
        remote = str(Path(remote).resolve())
    body = args.pr_body.resolve() if args.pr_body is not None else None
    return CardBranchRun(options, PushTarget(remote=remote, pr_body=body))


def ci_status(run: CardBranchRun, status: int, failed: int) -> int:
    """A Done card whose branch was not pushed did not deliver its pull request: `failed`."""
    if status == 0 and not (run.outcome and run.outcome.pushed):
        return failed
    return status
