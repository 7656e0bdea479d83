"""`cardrunner run CARD`: one card headless, with the live view on stderr.

Exit status: 0 the card ended Done (committed after an accepted review, verified by the runner),
1 it ended Failed, 2 usage or configuration error, 3 verified but not committed (`--no-commit`,
or the criteria already held with nothing to change; the card goes to Review). The run itself
is imported only when the verb runs, so `cardrunner --help` does not load the run's modules.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cardrunner.cli.ci import add_ci_arguments, ci_approver, ci_run, ci_status, ci_usage_error
from cardrunner.cli.confirm import refuse_blocked, refuse_rerun
from cardrunner.cli.exiting import (
    EXIT_DONE,
    EXIT_FAILED,
    EXIT_USAGE,
    EXIT_VERIFIED,
    EXIT_WAITING,
    Subparsers,
    err,
    run_bounded,
)
from cardrunner.config.paths import escapes, find_root

if TYPE_CHECKING:
    from cardrunner.agent.events import RunFinished
    from cardrunner.agent.review import Approver
    from cardrunner.run.options import RunOptions
    from cardrunner.trust.consent import TrustAsker


def add_parser(sub: Subparsers) -> None:
    """Register `run` and its options (the CI flags are cli/ci.py's)."""
    run = sub.add_parser(
        "run",
        help="run one card headless",
        epilog="Exit status: 0 the card ended Done (committed after an accepted review and "
        "verified by the runner), 1 it ended Failed, 2 usage or configuration error, 3 verified "
        "but not committed (--no-commit, or nothing needed to change; the card waits in Review; "
        "see docs/verification.md). A card already Done, or whose depends_on cards are not Done, "
        "runs only after a yes on the terminal or with --yes; else it is refused (exit 2).",
    )
    run.add_argument("card", type=Path, metavar="CARD", help="the card's Markdown file")
    run.add_argument("--model", help="the model to call (default: `model` in cardrunner.toml)")
    run.add_argument(
        "--replay",
        type=Path,
        metavar="TRANSCRIPT",
        help="play a transcript instead of calling the API, no key needed (default: `replay` "
        "in cardrunner.toml; see docs/transcripts.md)",
    )
    mode = run.add_mutually_exclusive_group()
    mode.add_argument(
        "--yes",
        action="store_true",
        help="accept the review automatically (and re-run a Done card without asking)",
    )
    mode.add_argument(
        "--no-commit",
        action="store_true",
        help="show the review, then end without committing: at best 'verified, not committed' "
        "(exit 3, the card goes to Review), never Done",
    )
    add_ci_arguments(run, mode)
    run.add_argument(
        "--trust-repository",
        action="store_true",
        help="trust this repository's config without asking (CI; also CARDRUNNER_TRUST=1); "
        "on a terminal cardrunner asks once, see `cardrunner trust` and docs/security.md",
    )
    _limit_arguments(run)
    run.set_defaults(verb=run_verb)


def _limit_arguments(run: argparse.ArgumentParser) -> None:
    """The run's budgets, and what a resume adds on top of the stopped run's."""
    limits = (
        ("--max-rounds", int, "N", "model calls in this run"),
        ("--max-tokens", int, "N", "tokens in this run, cache reads and writes included"),
        ("--max-cost", float, "USD", "dollars in this run, at the [prices] of cardrunner.toml"),
    )
    for flag, kind, metavar, what in limits:
        run.add_argument(
            flag, type=kind, metavar=metavar, help=f"at most this many {what}; 0 switches it off"
        )
    run.add_argument(
        "--resume", action="store_true", help="continue the card's last unfinished run from its log"
    )
    run.add_argument(
        "--grant-rounds",
        type=int,
        default=0,
        metavar="N",
        help="with --resume: rounds on top of the stopped run's limit",
    )
    run.add_argument(
        "--grant-cost",
        type=float,
        default=0.0,
        metavar="USD",
        help="with --resume: dollars on top of the stopped run's limit",
    )


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if args.model:
        out["model"] = args.model
    if args.replay:
        out["replay"] = str(args.replay.resolve())
    limits = {
        k: v
        for k, v in (
            ("max_rounds", args.max_rounds),
            ("max_tokens", args.max_tokens),
            ("max_cost_usd", args.max_cost),
        )
        if v is not None
    }
    if limits:
        out["limits"] = limits
    return out


def _ask(question: str) -> str:
    sys.stderr.write(question)
    sys.stderr.flush()
    return input()


def _trust(args: argparse.Namespace) -> TrustAsker | None:
    """The terminal asks the trust question; without one nobody can (`--yes` accepts reviews,
    never trust)."""
    from cardrunner.terminal.approver import TerminalTrust

    return TerminalTrust(sys.stderr.write, _ask) if sys.stdin.isatty() else None


def _approver(args: argparse.Namespace) -> Approver:
    """`--ci` reviews on the pull request, `--yes` accepts, `--no-commit` reviews without
    committing, else the terminal asks."""
    from cardrunner.agent.review import AutoApprover
    from cardrunner.terminal.approver import TerminalApprover

    if args.ci:
        return ci_approver()
    if args.yes:
        return AutoApprover("accept")
    if args.no_commit:
        return AutoApprover("no_commit")
    return TerminalApprover(sys.stderr.write)


def _run_options(args: argparse.Namespace) -> RunOptions | int:
    """The run the command line asks for, or the exit status of a usage error.

    The model, a resume and the sweep are the run's own preparation (`prepare_run`), the same
    for the editor and the demo; only what is particular to a command line is checked here."""
    from cardrunner.config.loading import has_clash, load_settings
    from cardrunner.run.options import ResumeGrant, RunOptions

    if (wrong := ci_usage_error(args)) is not None:
        err(f"cardrunner: {wrong}")
        return EXIT_USAGE
    if (why := escapes(args.card, find_root(args.card))) is not None:  # a link away: refused
        err(f"cardrunner: {why}")
        return EXIT_USAGE
    card = args.card.resolve()
    if not card.is_file():
        err(f"cardrunner: no such card: {args.card}")
        return EXIT_USAGE
    root = find_root(card)
    settings, problems = load_settings(root, _overrides(args))
    for problem in problems:
        err(f"cardrunner: {problem}")
    if has_clash(problems):
        return EXIT_USAGE
    if not args.resume:
        yes, tty = args.yes or args.ci, sys.stdin.isatty()
        refusal = refuse_rerun(card, yes=yes, tty=tty, ask=_ask) or refuse_blocked(
            card, root, settings.cards, yes=yes, tty=tty, ask=_ask
        )
        if refusal:
            err(f"cardrunner: {refusal}")
            return EXIT_USAGE
    grant = ResumeGrant(args.grant_rounds, args.grant_cost) if args.resume else None
    return RunOptions(
        root=root,
        card_path=card,
        settings=settings,
        approver=_approver(args),
        resume=grant,
        commit_card_state=not args.no_commit,  # --no-commit: nothing at all is committed
        trust=_trust(args),
        trusted=args.trust_repository,
    )


def run_verb(args: argparse.Namespace) -> int:
    """Run one card with the live view on stderr; the exit status says how it ended."""
    from cardrunner.run.session import RunSession
    from cardrunner.terminal.approver import TerminalApprover
    from cardrunner.terminal.liveview import LiveView

    options = _run_options(args)
    if isinstance(options, int):
        return options
    asks = isinstance(options.approver, TerminalApprover)
    view = LiveView(sys.stderr.write, sys.stderr.isatty() and not args.ci, asks)
    ci = ci_run(args, options) if args.ci else None
    if isinstance(ci, int):
        return ci

    async def main() -> int:
        task, loop = asyncio.current_task(), asyncio.get_running_loop()
        if task is not None:
            loop.add_signal_handler(signal.SIGINT, task.cancel)
            loop.add_signal_handler(signal.SIGTERM, task.cancel)
        status = EXIT_FAILED
        async for event in ci.events() if ci else RunSession(options).events():
            view.show(event)
            if event.type == "result":
                status = _exit_status(event)
        return ci_status(ci, status, EXIT_FAILED) if ci else status

    return run_bounded(main())


def _exit_status(result: RunFinished) -> int:
    """0 only when the card is Done on the user's branch: an accepted change that did not apply
    there waits on its own branch for review (4), which a script must not take for Done."""
    if result.reason == "config_error":
        return EXIT_USAGE
    if result.status == "done" and result.unmerged_branch:
        return EXIT_WAITING
    return {"done": EXIT_DONE, "verified": EXIT_VERIFIED, "failed": EXIT_FAILED}[result.status]
