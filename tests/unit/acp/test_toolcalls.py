"""A write shown to the ACP client as a diff, also when the run (another process) wrote the file
before its start was read here: the diff's "before" is then the text of the path's last write,
or the file at HEAD — never the new text again."""

from __future__ import annotations

from pathlib import Path

from acp.schema import FileEditToolCallContent

from cardrunner.acp.toolcalls import ToolCalls
from cardrunner.agent import events as ev
from tests.support.project import init_repo

OLD, NEW, NEWER = "def add(a, b):\n    return a - b\n", "return a + b\n", "return b + a\n"


def write(calls: ToolCalls, root: Path, use_id: str, text: str, late: bool) -> str | None:
    """One write_file of `text` to src/calc.py; `late`: the file is written before the start
    reaches the front end (the race), else between start and end. The diff's before-text."""
    args = {"path": "src/calc.py", "content": text}
    start = ev.ToolStarted(round=1, tool_use_id=use_id, name="write_file", arguments=args)
    end = ev.ToolFinished(
        round=1, tool_use_id=use_id, name="write_file", arguments=args, ms=1,
        result="wrote src/calc.py", is_error=False,
    )  # fmt: skip
    if late:
        (root / "src" / "calc.py").write_text(text)
    calls.started(start)
    (root / "src" / "calc.py").write_text(text)
    [update] = calls.finished(end)
    [diff] = [c for c in update.content or [] if isinstance(c, FileEditToolCallContent)]
    assert diff.new_text == text
    return diff.old_text


def test_a_write_read_too_late_still_shows_what_it_changed(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "calc.py").write_text(OLD)
    init_repo(root, "calc")
    calls = ToolCalls(root)

    assert write(calls, root, "toolu_1", NEW, late=True) == OLD, "from HEAD"
    assert write(calls, root, "toolu_2", NEWER, late=True) == NEW, "from the last write"
    assert write(calls, root, "toolu_3", OLD, late=False) == NEWER, "read at the start"
    assert write(calls, root, "toolu_4", OLD, late=False) == OLD, "a write that changed nothing"
