"""`cardrunner run --ci`: the flags of a CI run, and how its outcome sets the exit status.

Only the wiring lives here; what a CI run does is `board/ci.py`. The exit status is a local
run's (0 Done, 1 Failed, 2 usage or configuration), with one addition: a card that ended Done
but whose branch could not be pushed exits 1, because the job did not deliver its pull request.
`--from-review PR` reads the pull request's review first; GitHub failing or the pull request
not being one to continue from exits 1 before anything runs.

`cardrunner publish BUNDLE` is the other half of a CI run, the workflow's push job: the job
that ran the model hands over its commits as a git bundle, and this checks them against the
base's settings (`board/publish.py`) and only then pushes the card's branch. 0 pushed (or, with
`--check-only`, accepted), 1 refused or not pushed, 2 usage.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from cardrunner.cli.exiting import EXIT_DONE, EXIT_FAILED, EXIT_USAGE, Subparsers, err

if TYPE_CHECKING:
    from cardrunner.agent.review import Approver
    from cardrunner.board.ci import CardBranchRun
    from cardrunner.board.publish import CheckedBundle
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
    run.add_argument(
        "--review-file",
        type=Path,
        metavar="FILE",
        help="with --ci: as --from-review, from the review `cardrunner fetch-review` saved "
        "(so the job that runs the model needs no GitHub token)",
    )


def ci_usage_error(args: argparse.Namespace) -> str | None:
    """Why the CI flags were given wrongly, or None."""
    given = (args.remote, args.pr_body, args.from_review, args.review_file)
    if not args.ci and given != (None, None, None, None):
        return "--remote, --pr-body, --from-review and --review-file only go with --ci"
    if args.from_review is not None and args.review_file is not None:
        return "--from-review reads the review from GitHub, --review-file from a file: one of them"
    if args.remote is not None and args.remote.startswith("-"):
        return f"--remote {args.remote!r} starts with '-'; git would read it as an option"
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
    review: PullReview | int | None = None
    if args.from_review is not None:
        review = _review(args.from_review)
    elif args.review_file is not None:
        review = _saved_review(args.review_file)
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


def _saved_review(path: Path) -> PullReview | int:
    """The review `fetch-review` saved: exactly its fields and types, or a usage error."""
    import json
    from dataclasses import fields

    from cardrunner.board.pullreview import PullReview

    try:
        data = json.loads(path.read_text("utf-8"))
        kinds = {
            f.name: (int if f.name == "number" or f.name == "remarks" else str)
            for f in fields(PullReview)
        }
        if not isinstance(data, dict) or set(data) != set(kinds):
            raise ValueError(f"the fields must be {sorted(kinds)}")
        for name, kind in kinds.items():
            if type(data[name]) is not kind:
                raise ValueError(f"{name} must be {kind.__name__}")
        return PullReview(**data)
    except (OSError, ValueError) as exc:
        err(f"cardrunner: --review-file {path}: not a saved review: {exc}")
        return EXIT_USAGE


def fetch_review_command(args: argparse.Namespace) -> int:
    """Read the pull request's review through GitHub (the token is this job's) and save it."""
    import json
    from dataclasses import asdict

    review = _review(args.pr)
    if isinstance(review, int):
        return review
    args.out.write_text(json.dumps(asdict(review), indent=1) + "\n", "utf-8")
    err(
        f"saved the review of {review.repo}#{review.number} ({review.remarks} remark(s)) to {args.out}"
    )
    return EXIT_DONE


def ci_status(run: CardBranchRun, status: int, failed: int) -> int:
    """A Done card whose branch was not pushed did not deliver its pull request: `failed`."""
    if status == 0 and not (run.outcome and run.outcome.pushed):
        return failed
    return status


PR_BODY_LIMIT = 60_000
"""Characters of a pull request's body kept (GitHub takes 65,536): the rest is cut, and said."""


def add_parser(sub: Subparsers) -> None:
    """Register `publish` (the push job's check and push of a CI run's bundle) and
    `fetch-review`."""
    publish = sub.add_parser(
        "publish",
        help="CI push job: check a card run's git bundle, then push the card's branch",
        description=(
            "Check the git bundle a `run --ci` job handed over: one branch cards/<slug>, a "
            "line of at most --max-commits commits on --base, every file inside the write area "
            "of the base's own settings (or the card's own file), no workflow, CI or settings "
            "file, no symlink, within the size limits. Then push it to --remote, never forced. "
            "Exit 0 pushed (--check-only: accepted), 1 refused or not pushed, 2 usage."
        ),
    )
    publish.add_argument("bundle", type=Path, help="the git bundle of the card's branch")
    publish.add_argument(
        "--base", required=True, metavar="SHA",
        help="the full commit id the run started from (this checkout must have it)",
    )  # fmt: skip
    publish.add_argument(
        "--branch", metavar="cards/SLUG",
        help="the card's branch the workflow expects (default: the bundle's, if a card's)",
    )  # fmt: skip
    publish.add_argument(
        "--remote", default="origin", metavar="NAME|URL", help="where to push (default: origin)"
    )
    publish.add_argument(
        "--check-only", action="store_true", help="check, push nothing (exit 0 if accepted)"
    )
    publish.add_argument(
        "--title-out", type=Path, metavar="FILE",
        help="write the pull request's title here: `card: <the card's title>`, one line",
    )  # fmt: skip
    publish.add_argument(
        "--pr-body", type=Path, metavar="FILE",
        help=f"the run's pull-request body: cut in place to {PR_BODY_LIMIT} characters",
    )  # fmt: skip
    limits = (
        ("commits", 5, "commits on the base"),
        ("files", 200, "files the commits touch"),
        ("file-bytes", 1_000_000, "bytes a file"),
        ("total-bytes", 5_000_000, "bytes of all files"),
    )
    for name, default, what in limits:
        publish.add_argument(
            f"--max-{name}", type=int, default=default, metavar="N",
            help=f"at most N {what} (default: {default})",
        )  # fmt: skip
    publish.set_defaults(verb=publish_command)
    _add_fetch_review(sub)


def _add_fetch_review(sub: Subparsers) -> None:
    """Register `fetch-review`, the gate job's half of `run --ci --review-file`."""
    fetch = sub.add_parser(
        "fetch-review",
        help="CI gate job: save a card pull request's review for `run --ci --review-file`",
        description=(
            "Read the review of a card's pull request as `run --ci --from-review` does (the "
            "token from GITHUB_TOKEN or GH_TOKEN) and save it as JSON, so that the job that "
            "runs the model reads it from a file and holds no GitHub token. Exit 0 saved, 1 "
            "GitHub failed or the pull request is not one to continue from, 2 usage."
        ),
    )
    fetch.add_argument("pr", metavar="PR", help="N in $GITHUB_REPOSITORY, OWNER/REPO#N or its URL")
    fetch.add_argument("out", type=Path, metavar="FILE", help="where to save the review (JSON)")
    fetch.set_defaults(verb=fetch_review_command)


def publish_command(args: argparse.Namespace) -> int:
    """Check, then push; every refusal is one line naming the rule, the commit and the file."""
    from cardrunner.board.publish import BundleRefused, Limits, check_bundle, publish
    from cardrunner.cli.exiting import run_bounded
    from cardrunner.config.paths import find_root
    from cardrunner.git.repo import GitError

    if args.remote.startswith("-"):
        err(f"cardrunner: --remote {args.remote!r} starts with '-'; git would read it as an option")
        return EXIT_USAGE
    limits = Limits(args.max_commits, args.max_files, args.max_file_bytes, args.max_total_bytes)
    root = find_root(Path.cwd())
    bundle = args.bundle.resolve()

    async def main() -> int:
        try:
            checked = await check_bundle(root, bundle, args.base, args.branch, limits)
        except (BundleRefused, GitError) as exc:
            err(f"cardrunner: refused: {exc}")
            return EXIT_FAILED
        err(_accepted(checked))
        _outputs(args, checked)
        if args.check_only:
            return EXIT_DONE
        try:
            await publish(root, checked, args.remote)
        except (BundleRefused, GitError) as exc:
            err(f"cardrunner: not pushed: {exc}")
            return EXIT_FAILED
        err(f"pushed {checked.branch} ({checked.tip[:10]}) to {args.remote}")
        return EXIT_DONE

    return run_bounded(main())


def _accepted(checked: CheckedBundle) -> str:
    files = ", ".join(checked.paths)
    return (
        f"accepted {checked.branch}: {len(checked.commits)} commit(s) on "
        f"{checked.base[:10]}, {len(checked.paths)} file(s): {files}"
    )


def _outputs(args: argparse.Namespace, checked: CheckedBundle) -> None:
    """The title file and the body cut to size: files, never a workflow output line."""
    if args.title_out is not None:
        title = checked.title or checked.branch
        args.title_out.write_text(f"card: {title}\n", "utf-8")
    if args.pr_body is not None and args.pr_body.is_file():
        body = args.pr_body.read_text("utf-8", errors="replace")
        if len(body) > PR_BODY_LIMIT:
            cut = f"\n\n(cut: the body had {len(body)} characters; the run log has it all)\n"
            args.pr_body.write_text(body[: PR_BODY_LIMIT - len(cut)] + cut, "utf-8")
