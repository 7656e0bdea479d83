"""`cardrunner run --ci`: the flags of a CI run, and how its outcome sets the exit status.

Only the wiring lives here; what a CI run does is `board/ci.py`. The exit status is a local
run's (0 Done, 1 Failed, 2 usage or configuration), with one addition: a card that ended Done
but whose branch could not be pushed exits 1, because the job did not deliver its pull request.
`--from-review PR` reads the pull request's review first; GitHub failing or the pull request
not being one to continue from exits 1 before anything runs.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from cardrunner.cli.exiting import EXIT_FAILED, EXIT_USAGE, err

if TYPE_CHECKING:
    from cardrunner.agent.review import Approver
    from cardrunner.board.ci import CardBranchRun
    from cardrunner.board.pullreview import PullReview
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
    run.add_argument(
        "--from-review",
        metavar="PR",
        help="with --ci: continue on the card's branch from the review of its pull request "
        "(N in $GITHUB_REPOSITORY, OWNER/REPO#N or its URL) and push one more commit",
    )


def ci_usage_error(args: argparse.Namespace) -> str | None:
    """Why the CI flags were given wrongly, or None."""
    if not args.ci and (args.remote, args.pr_body, args.from_review) != (None, None, None):
        return "--remote, --pr-body and --from-review only go with --ci"
    if args.ci and args.resume:
        return "--ci starts a new branch; it cannot resume a run"
    return None


def ci_approver() -> Approver:
    from cardrunner.board.ci import PullRequestApprover

    return PullRequestApprover()


def ci_run(args: argparse.Namespace, options: RunOptions) -> CardBranchRun | int:
    """The CI run for these options (a remote that is an existing path is taken from here), or
    the exit status when the review it continues from cannot be read."""
    from cardrunner.board.ci import CardBranchRun, PushTarget

    remote = args.remote or "origin"
    if Path(remote).exists():
        remote = str(Path(remote).resolve())
    body = args.pr_body.resolve() if args.pr_body is not None else None
    review = _review(args.from_review) if args.from_review is not None else None
    if isinstance(review, int):
        return review
    return CardBranchRun(options, PushTarget(remote=remote, pr_body=body), continues=review)


def _review(text: str) -> PullReview | int:
    """The pull request's review, read through GitHub's REST API as `import github` does."""
    from cardrunner.board.github import GitHub, GitHubError, find_token
    from cardrunner.board.pullreview import fetch_review, pull_request_ref

    ref = pull_request_ref(text, os.environ.get("GITHUB_REPOSITORY"))
    if ref is None:
        err(
            f"cardrunner: --from-review {text!r} is not N (with GITHUB_REPOSITORY), OWNER/REPO#N or a pull request's URL"
        )
        return EXIT_USAGE
    client = GitHub(token=find_token())
    try:
        review = fetch_review(client, *ref)
    except GitHubError as error:
        err(f"cardrunner: {error}")
        return EXIT_FAILED
    finally:
        for seconds in client.waited:
            err(f"waited {seconds:.0f} s for GitHub's rate limit")
    for (
        line
    ) in review.left_out.splitlines():  # a stranger's remark is named, never read to the model
        err(f"left out a remark by {line}: only users with write access are heard")
    return review


def ci_status(run: CardBranchRun, status: int, failed: int) -> int:
    """A Done card whose branch was not pushed did not deliver its pull request: `failed`."""
    if status == 0 and not (run.outcome and run.outcome.pushed):
        return failed
    return status
