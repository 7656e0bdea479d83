"""`cardrunner transcript RUN.jsonl [-o OUT.json]`: a run's log as a replayable transcript.

Like every verb, its parser and its command live here; cli/main.py only lists it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cardrunner.cli.exiting import EXIT_DONE, EXIT_USAGE, Subparsers


def add_parser(sub: Subparsers) -> None:
    """Register `transcript` and its options."""
    cmd = sub.add_parser(
        "transcript",
        help="turn a run log into a transcript that replays the run without the API",
        description="Write the run's model responses as a transcript (docs/transcripts.md). "
        "Replay it with `cardrunner run CARD --replay OUT.json` or `replay` in cardrunner.toml.",
        epilog="Exit status: 0 written, 2 the file cannot be read or is not a run log.",
    )
    cmd.add_argument("log", type=Path, metavar="RUN.jsonl", help="a file in .cardrunner/runs/")
    cmd.add_argument(
        "-o",
        "--output",
        type=Path,
        metavar="OUT.json",
        help="where to write the transcript (default: standard output)",
    )
    cmd.add_argument(
        "--estimate-usage",
        action="store_true",
        help="leave the recorded token usage out, so the replay estimates it (with a simulated "
        "prompt cache) instead of repeating what the original run was billed",
    )

    cmd.set_defaults(verb=run)


def run(args: argparse.Namespace) -> int:
    """The `transcript` command; returns the exit status."""
    from cardrunner.record.log import NotARunLog
    from cardrunner.record.transcript import transcript_from_log, transcript_json

    try:
        transcript = transcript_from_log(
            args.log, "estimated" if args.estimate_usage else "recorded"
        )
    except OSError as exc:
        sys.stderr.write(f"cardrunner: cannot read {args.log}: {exc}\n")
        return EXIT_USAGE
    except NotARunLog as exc:
        sys.stderr.write(f"cardrunner: {exc}\n")
        return EXIT_USAGE
    text = transcript_json(transcript)
    if args.output is None:
        sys.stdout.write(text)
        return EXIT_DONE
    try:
        args.output.write_text(text, encoding="utf-8")
    except OSError as exc:
        sys.stderr.write(f"cardrunner: cannot write {args.output}: {exc}\n")
        return EXIT_USAGE
    sys.stderr.write(f"{len(transcript.responses)} responses written to {args.output}\n")
    return EXIT_DONE
