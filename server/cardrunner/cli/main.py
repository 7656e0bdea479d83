"""`cardrunner`: run a card headless, serve the language server, check cards, run the demo.

Exit status of `run`: 0 the card ended Done (committed after an accepted review, verified by the
runner), 1 it ended Failed, 2 usage or configuration error, 3 verified but not committed
(`--no-commit`, or the criteria already held with nothing to change; the card goes to Review).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cardrunner.agent.events import RunFinished
    from cardrunner.agent.review import Approver
    from cardrunner.run.options import RunOptions

EXIT_DONE, EXIT_FAILED, EXIT_USAGE, EXIT_VERIFIED = 0, 1, 2, 3


def find_root(start: Path) -> Path:
    """The workspace root: the nearest folder upwards with cardrunner.toml or .git."""
    start = start.resolve()
    for folder in [start, *start.parents] if start.is_dir() else list(start.parents):
        if (folder / "cardrunner.toml").is_file() or (folder / ".git").exists():
            return folder
    return start if start.is_dir() else start.parent


def _version() -> str:
    """The installed distribution's version (the wheel's), else the package's own."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cardrunner")
    except PackageNotFoundError:
        from cardrunner import __version__

        return __version__


class _VersionAction(argparse.Action):
    """`--version`, looked up only when asked: reading the installed distribution's metadata
    costs `cardrunner lsp` ~10–20 ms of its start-up otherwise."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.setdefault("help", "show the version and exit")
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        print(f"cardrunner {_version()}")  # on stdout, as argparse's own version action does
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="cardrunner",
        description=__doc__.splitlines()[0] if __doc__ else "",
        epilog="Exit status of run: 0 Done, 1 Failed, 2 usage or configuration error. "
        "`cardrunner COMMAND --help` explains each command.",
    )
    p.add_argument("--version", action=_VersionAction)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _run_parser(sub)
    sub.add_parser("lsp", help="serve the language server on stdio (for editors)")
    check = sub.add_parser(
        "check",
        help="validate cards and configuration, print problems",
        epilog="Exit status: 0 no problems, 1 problems were printed (errors or warnings), "
        "2 a path does not exist.",
    )
    check.add_argument(
        "paths",
        nargs="*",
        type=Path,
        metavar="PATH",
        help="cards, folders of cards or workspace roots (default: the current folder)",
    )
    demo = sub.add_parser("demo", help="create the demo repository and run its cards (no API key)")
    demo.add_argument(
        "dir",
        nargs="?",
        type=Path,
        metavar="DIR",
        help="a new or empty folder for the demo repository (default: a new folder under the "
        "system's temporary folder, printed)",
    )
    demo.add_argument(
        "--yes", action="store_true", help="accept every review without asking (as without a tty)"
    )
    log = sub.add_parser(
        "log",
        help="readable summary of a run log, or a card's runs (from git)",
        epilog="Exit status: 0 printed, 2 the file cannot be read or is not a run log or card.",
    )
    log.add_argument(
        "log",
        type=Path,
        metavar="RUN.jsonl|CARD.md",
        help="a file in .cardrunner/runs/, or a card: its runs, newest first, read from the "
        "trailers of its card commits",
    )
    from cardrunner.cli.plan import add_plan_parser
    from cardrunner.cli.transcript import add_transcript_parser

    add_plan_parser(sub)
    add_transcript_parser(sub)
    return p


def _run_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = sub.add_parser(
        "run",
        help="run one card headless",
        epilog="Exit status: 0 the card ended Done (committed after an accepted review and "
        "verified by the runner), 1 it ended Failed, 2 usage or configuration error, 3 verified "
        "but not committed (--no-commit, or nothing needed to change; the card waits in Review; "
        "see docs/verification.md). A card that is already Done is run again only after a yes on the terminal, or "
        "with --yes; without a terminal and without --yes it is refused (exit 2).",
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
    from cardrunner.cli.ci import add_ci_arguments

    add_ci_arguments(run, mode)
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


def _err(text: str) -> None:
    sys.stderr.write(text + "\n")


def _ask(question: str) -> str:
    sys.stderr.write(question)
    sys.stderr.flush()
    return input()


def _approver(args: argparse.Namespace) -> Approver:
    """`--ci` reviews on the pull request, `--yes` accepts, `--no-commit` reviews without
    committing, else the terminal asks."""
    from cardrunner.agent.review import AutoApprover
    from cardrunner.cli.ci import ci_approver
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
    from cardrunner.cli.ci import ci_usage_error
    from cardrunner.cli.confirm import refuse_rerun
    from cardrunner.config.settings import has_clash, load_settings
    from cardrunner.run.grant import ResumeGrant
    from cardrunner.run.options import RunOptions

    if (wrong := ci_usage_error(args)) is not None:
        _err(f"cardrunner: {wrong}")
        return EXIT_USAGE
    card = args.card.resolve()
    if not card.is_file():
        _err(f"cardrunner: no such card: {args.card}")
        return EXIT_USAGE
    root = find_root(card)
    settings, problems = load_settings(root, _overrides(args))
    for problem in problems:
        _err(f"cardrunner: {problem}")
    if has_clash(problems):
        return EXIT_USAGE
    if not args.resume:
        refusal = refuse_rerun(card, yes=args.yes or args.ci, tty=sys.stdin.isatty(), ask=_ask)
        if refusal:
            _err(f"cardrunner: {refusal}")
            return EXIT_USAGE
    grant = ResumeGrant(args.grant_rounds, args.grant_cost) if args.resume else None
    return RunOptions(
        root=root,
        card_path=card,
        settings=settings,
        approver=_approver(args),
        resume=grant,
        commit_card_state=not args.no_commit,  # --no-commit: nothing at all is committed
    )


def cmd_run(args: argparse.Namespace) -> int:
    """Run one card with the live view on stderr; the exit status says how it ended."""
    from cardrunner.cli.ci import ci_run, ci_status
    from cardrunner.run.session import RunSession
    from cardrunner.terminal.liveview import LiveView

    options = _run_options(args)
    if isinstance(options, int):
        return options
    view = LiveView(sys.stderr.write, sys.stderr.isatty() and not args.ci)
    ci = ci_run(args, options) if args.ci else None

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

    from cardrunner.cli.exiting import run_bounded

    return run_bounded(main())


def _exit_status(result: RunFinished) -> int:
    if result.reason == "config_error":
        return EXIT_USAGE
    return {"done": EXIT_DONE, "verified": EXIT_VERIFIED, "failed": EXIT_FAILED}[result.status]


def cmd_check(args: argparse.Namespace) -> int:
    from cardrunner.cli.check import check_paths, sandbox_modes

    paths = args.paths or [Path.cwd()]
    problems = check_paths(paths)
    for line in [*sandbox_modes(paths), *problems]:
        print(line)
    if not problems:
        print("no problems found")
    if any(not path.exists() for path in paths):
        return EXIT_USAGE
    return EXIT_FAILED if problems else EXIT_DONE


def cmd_log(args: argparse.Namespace) -> int:
    from cardrunner.config.display import shown
    from cardrunner.run.account import summarize_log
    from cardrunner.run.log import NotARunLog

    if args.log.suffix.lower() in (".md", ".markdown"):
        return _card_log(args.log)

    try:
        print(shown(summarize_log(args.log)))  # the log holds model text and tool output
    except OSError as exc:
        _err(f"cardrunner: cannot read {args.log}: {exc}")
        return EXIT_USAGE
    except NotARunLog as exc:
        _err(f"cardrunner: {exc}")
        return EXIT_USAGE
    return EXIT_DONE


def _card_log(card_path: Path) -> int:
    from cardrunner.card.card import CardError
    from cardrunner.cli.history import card_history
    from cardrunner.config.display import shown

    try:
        lines = asyncio.run(card_history(card_path, find_root(card_path)))
    except CardError as exc:
        why = exc.problems[0].message if exc.problems else str(exc)
        _err(f"cardrunner: {card_path} is not a run log, and not a card: {why}")
        return EXIT_USAGE
    print(shown("\n".join(lines)))
    return EXIT_DONE


def cmd_transcript(args: argparse.Namespace) -> int:
    from cardrunner.cli.transcript import run_transcript

    return run_transcript(args)


def cmd_plan(args: argparse.Namespace) -> int:
    from cardrunner.cli.plan import run_plan

    return run_plan(args, find_root(args.paths[0] if args.paths else Path.cwd()))


def cmd_lsp(args: argparse.Namespace) -> int:
    from cardrunner.lsp.server import serve

    serve()
    return EXIT_DONE


def cmd_demo(args: argparse.Namespace) -> int:
    from cardrunner.demo.command import run_demo

    return run_demo(args.dir, yes=args.yes)


def main(argv: Sequence[str] | None = None) -> int:
    """Every command, through the parser (`cardrunner lsp` alone skips it: cli/entry.py)."""
    args = _parser().parse_args(argv)
    handler = {
        "run": cmd_run,
        "check": cmd_check,
        "log": cmd_log,
        "lsp": cmd_lsp,
        "demo": cmd_demo,
        "plan": cmd_plan,
        "transcript": cmd_transcript,
    }
    try:
        return handler[args.command](args)
    except KeyboardInterrupt:
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
