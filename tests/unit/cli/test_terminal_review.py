"""The terminal's review, in the order a person reads it: the run's status, the diff, then the
question — on one stream, as `cardrunner run` writes it, through a real run."""

from __future__ import annotations

from pathlib import Path

from cardrunner.config.loading import load_settings
from cardrunner.models.scripted import ScriptedModel
from cardrunner.run.options import RunOptions
from cardrunner.run.session import RunSession
from cardrunner.terminal.approver import TerminalApprover
from cardrunner.terminal.liveview import LiveView
from tests.support.project import fix_transcript, make_project


async def test_the_status_line_comes_before_the_question_and_only_once(tmp_path: Path) -> None:
    make_project(tmp_path)
    settings, _ = load_settings(tmp_path)
    screen: list[str] = []
    asked: list[str] = []

    def answer(prompt: str) -> str:
        asked.append("".join(screen) + prompt)  # the screen when the question appears
        return "y"

    options = RunOptions(
        root=tmp_path,
        card_path=tmp_path / "cards/fix-add.md",
        settings=settings,
        approver=TerminalApprover(screen.append, answer),
        model=ScriptedModel(fix_transcript()),
    )
    live = LiveView(screen.append, tty=False, asks=True)
    async for event in RunSession(options).events():
        live.show(event)
    [shown] = asked
    status = shown.rindex("⏸ review requested: ")
    assert status < shown.index("── review: ") < shown.index("Accept & commit? [y]es")
    whole = "".join(screen)
    assert whole.count("⏸ review requested") == 1, whole
    assert "review: accept committed" in whole
