"""`cardrunner trust [PATH]`: review, grant (`--yes`) or revoke (`--revoke`) a repository's trust.

Prints what the repository's config asks for (what will run, what is widened; trust/requests.py)
and whether the user trusts exactly that. The grant is kept in the user's own cardrunner folder,
never in the repository (trust/grants.py). Exit status: 0 trusted (or nothing to trust), 1 not
trusted (the review only), 2 the path does not exist or the grant cannot be stored.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from cardrunner.cli.exiting import EXIT_DONE, EXIT_FAILED, EXIT_USAGE, Subparsers, err
from cardrunner.config.paths import find_root
from cardrunner.trust import grants as store
from cardrunner.trust.consent import question
from cardrunner.trust.requests import fingerprint, requests


def add_parser(sub: Subparsers) -> None:
    """Register `trust` and its options."""
    trust = sub.add_parser(
        "trust",
        help="review, grant or revoke trust in a repository's config",
        epilog="Exit status: 0 trusted (or nothing to trust), 1 not trusted, 2 no such path or "
        "the grant could not be stored. See docs/security.md.",
    )
    trust.add_argument(
        "path", nargs="?", type=Path, metavar="PATH", help="the repository (default: here)"
    )
    what = trust.add_mutually_exclusive_group()
    what.add_argument("--yes", action="store_true", help="trust what the config asks for now")
    what.add_argument("--revoke", action="store_true", help="forget the repository's trust")
    trust.set_defaults(verb=run)


def run(args: argparse.Namespace) -> int:
    """Show, grant or revoke; the exit status says whether the repository is trusted now."""
    path = args.path or Path.cwd()
    if not path.exists():
        err(f"cardrunner: no such file or folder: {path}")
        return EXIT_USAGE
    root = find_root(path)
    if args.revoke:
        gone = store.revoke(root)
        print(f"{root}: " + ("no longer trusted" if gone else "was not trusted"))
        return EXIT_DONE
    asked = requests(root)
    if not asked:
        print(f"{root}: its config asks for nothing that needs trust")
        return EXIT_DONE
    pending = question(root)
    print(f"{root}: its config asks for:")
    for item in asked:
        print(f"  • {item.text}")
    if pending is None:
        print("trusted")
        return EXIT_DONE
    if not args.yes:
        why = "changed since you trusted it" if pending.changed else "not trusted"
        print(f"{why}; `cardrunner trust --yes {root}` trusts it")
        return EXIT_FAILED
    try:
        store.grant(root, fingerprint(asked), [r.text for r in asked])
    except OSError as exc:
        err(f"cardrunner: cannot store the grant: {exc}")
        return EXIT_USAGE
    print("trusted")
    return EXIT_DONE
