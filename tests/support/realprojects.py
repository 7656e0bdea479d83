"""Real published projects for the ecosystem tests, fetched from the registries, never committed.

The code of public projects may not be committed here, so the end-to-end tests obtain each one
the way its users would: from the registry CI can reach (PyPI, npm, Debian), pinned by exact
version and by the archive's sha256, unpacked and prepared (its test tools installed) once into
a cache folder — `$CARDRUNNER_TEST_PROJECTS`, else `~/.cache/cardrunner-tests/projects` — that
later sessions and the parallel test workers share (a lock per project).

`.ci/run` calls `python -m tests.support.realprojects` before the tests, so CI always runs them;
a test skips (with the reason) only when a registry cannot be reached outside CI.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.support import tsproject


class FetchError(Exception):
    """A project could not be downloaded or prepared; str() says which and why."""


class RegistryUnreachable(FetchError):
    """The registry's client could not download the archive (no network, registry down)."""


@dataclass(frozen=True)
class Pin:
    """One published archive: where it comes from, exactly which, and where the project is in it."""

    key: str
    registry: str
    name: str
    version: str
    archive: str
    sha256: str
    inner: str
    """The project's folder inside the unpacked archive."""


PINS = {
    pin.key: pin
    for pin in (
        Pin(
            "python", "pypi", "exceptiongroup", "1.3.1", "exceptiongroup-1.3.1.tar.gz",
            "8b412432c6055b0b7d14c310000ae93352ed6754f70fa8f7c34141f91c4e3219",
            "exceptiongroup-1.3.1",
        ),
        Pin(
            "rust", "debian", "librust-pico-args-dev", "0.4.2-1+b1",
            "librust-pico-args-dev_0.4.2-1+b1_amd64.deb",
            "cc68b0e362b7d4411f6664c61a89bc35844ecb7faeb899b1b70df8410c4d04f7",
            "usr/share/cargo/registry/pico-args-0.4.2",
        ),
        Pin(
            "javascript", "npm", "sprintf-js", "1.0.3", "sprintf-js-1.0.3.tgz",
            "3afb26bcc328dc90f516515acf2783ad35b08dbfe9e0ada18264c3c4ddaa1a83", "package",
        ),
        Pin(
            "typescript", "npm", "tiny-invariant", "1.3.3", "tiny-invariant-1.3.3.tgz",
            "746a0b1c98dafa3f96769e200a23fd10dacece300b312d111d19bb65c85c3d48", "package",
        ),
        Pin(
            "flaskr", "pypi", "flask", "3.1.2", "flask-3.1.2.tar.gz",
            "bf656c15c80190ed628ad08cdfd3aaa35beb087855e2f494910aa3774cc4fd87",
            "flask-3.1.2/examples/tutorial",
        ),
    )
}  # fmt: skip

FLIT_SCM = "flit_scm==1.7.0"
"""exceptiongroup's build backend, installed once for `pip install -e . --no-build-isolation`."""
FLASK = (
    "flask==3.1.2", "werkzeug==3.1.9", "jinja2==3.1.6", "markupsafe==3.0.4", "itsdangerous==2.2.0",
    "click==8.5.1", "blinker==1.9.0", "flit_core==3.12.0",
)  # fmt: skip
"""Flask's tutorial app "flaskr" (the sdist's examples/tutorial, BSD) runs on Flask and what it
depends on, pinned here, with flit_core, flaskr's build backend, for its editable install."""
MOCHA = "mocha@10.8.2"
"""sprintf-js's devDependency (`"mocha": "*"` in its package.json), pinned here."""


def cache_root() -> Path:
    """Where prepared projects are kept between test sessions."""
    configured = os.environ.get("CARDRUNNER_TEST_PROJECTS")
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "cardrunner-tests" / "projects"


def _run(argv: list[str], cwd: Path, what: str) -> None:
    try:
        proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FetchError(f"{what}: {' '.join(argv)}: {exc}") from exc
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-5:])
        raise FetchError(f"{what}: {' '.join(argv)} exited {proc.returncode}:\n{tail}")


def _download(pin: Pin, into: Path) -> Path:
    """The archive, by the registry's ordinary client, checked against its sha256."""
    spec = {
        "pypi": [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-binary",
            ":all:",
            "--no-deps",
            "-d",
            str(into),
            f"{pin.name}=={pin.version}",
        ],
        "npm": ["npm", "pack", "-q", "--pack-destination", str(into), f"{pin.name}@{pin.version}"],
        "debian": ["apt-get", "download", "-q", f"{pin.name}={pin.version}"],
    }[pin.registry]
    try:
        try:
            _run(spec, into, f"download {pin.name} {pin.version}")
        except FetchError:
            if pin.registry != "debian" or os.geteuid() != 0:
                raise
            _run(["apt-get", "update", "-q"], into, "apt-get update")  # a fresh machine's lists
            _run(spec, into, f"download {pin.name} {pin.version}")
    except FetchError as exc:
        raise RegistryUnreachable(str(exc)) from exc
    archive = into / pin.archive
    if not archive.is_file():
        raise FetchError(f"{pin.registry} gave no {pin.archive}: {sorted(os.listdir(into))}")
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != pin.sha256:
        raise FetchError(f"{pin.archive}: sha256 {digest}, pinned {pin.sha256}")
    return archive


def _unpack(pin: Pin, archive: Path, into: Path) -> Path:
    into.mkdir()
    if archive.name.endswith(".deb"):
        _run(["dpkg-deb", "-x", str(archive), str(into)], into, f"unpack {archive.name}")
    else:
        with tarfile.open(archive) as tar:
            tar.extractall(into, filter="data")
    project = into / pin.inner
    if not project.is_dir():
        raise FetchError(f"{archive.name} has no {pin.inner}/")
    return project


def _prepare_python(project: Path, extra: Path) -> None:
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--target",
            str(extra / "buildtools"),
            FLIT_SCM,
        ],
        project,
        "install the build backend",
    )


def _prepare_flaskr(project: Path, extra: Path) -> None:
    argv = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target"]
    _run([*argv, str(extra / "buildtools"), *FLASK], project, "install Flask")


def _prepare_javascript(project: Path, extra: Path) -> None:
    _run(["npm", "install", "-q", "--no-save", "--no-audit", "--no-fund", MOCHA], project, "mocha")


def _prepare_typescript(project: Path, extra: Path) -> None:
    tsproject.add_tests(project)
    _run(["npm", "install", "-q", "--no-audit", "--no-fund"], project, "the TypeScript tools")


PREPARE: dict[str, Callable[[Path, Path], None]] = {
    "python": _prepare_python,
    "rust": lambda project, extra: None,  # dependency-free: `cargo test --offline` needs nothing
    "javascript": _prepare_javascript,
    "typescript": _prepare_typescript,
    "flaskr": _prepare_flaskr,
}


def fetch(key: str) -> Path:
    """The prepared project's folder (`tree/` under its cache entry), fetched if not yet there."""
    pin = PINS[key]
    entry = cache_root() / f"{pin.name}-{pin.version}"
    ready = entry / "ready"
    entry.parent.mkdir(parents=True, exist_ok=True)
    with open(entry.parent / f".{entry.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel workers: one fetches, the others wait
        if ready.is_file() and ready.read_text() == pin.sha256:
            return entry / "tree"
        shutil.rmtree(entry, ignore_errors=True)
        with tempfile.TemporaryDirectory(dir=entry.parent) as tmp:
            work = Path(tmp)
            project = _unpack(pin, _download(pin, work), work / "unpacked")
            try:  # the test tools come from the registry too
                PREPARE[key](project, work)
            except FetchError as exc:
                raise RegistryUnreachable(str(exc)) from exc
            project.rename(work / "tree")
            (work / "ready").write_text(pin.sha256)
            work.rename(entry)
            work.mkdir()  # for TemporaryDirectory's clean-up
        return entry / "tree"


def buildtools(key: str) -> Path:
    """Packages installed beside the project at fetch time (the Python build backend)."""
    return fetch(key).parent / "buildtools"


def main() -> int:
    """Fetch every pinned project (CI does this before the tests); exit 1 naming a failure."""
    failed = 0
    for key in PINS:
        try:
            print(f"{key}: {fetch(key)}")
        except FetchError as exc:
            print(f"{key}: {exc}", file=sys.stderr)
            failed = 1
    return failed


if __name__ == "__main__":
    sys.exit(main())
