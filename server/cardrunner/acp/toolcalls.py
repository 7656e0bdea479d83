"""A run's tool calls as ACP tool calls: kind, locations, live output, file writes as diffs.

The clients show a tool call by its `kind` (an icon, whether to open the file) and its
`locations` (follow-along), and a file write only as a diff: `{type: "diff", path: <absolute>,
oldText, newText}`. The run's events carry the call's arguments and result but not the file's
text, so a write's "before" is read when the call starts and its "after" when it ends, from the
run's working folder. The run is in another process and does not wait for us: on a busy
machine the write can be done before its start is read here, and "before" then reads as
"after". Such a diff falls back to the text this front end saw after the path's last write,
else to the file at the working folder's HEAD. A call seen only when it ended (a replayed log
has no `tool_start`) is announced whole, with its final status.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

from acp import start_tool_call, text_block, tool_content, tool_diff_content, update_tool_call
from acp.schema import (
    ContentToolCallContent,
    FileEditToolCallContent,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallStatus,
    ToolKind,
)

from cardrunner.agent import events as ev
from cardrunner.git.safety import committed_blob

Update = ToolCallStart | ToolCallProgress

KINDS: dict[str, ToolKind] = {
    "list_files": "read",
    "read_file": "read",
    "write_file": "edit",
    "edit_file": "edit",
    "build_app": "execute",
    "run_tests": "execute",
    "start_app": "execute",
    "stop_app": "execute",
    "report_criterion": "think",
}
"""The runner's own tools; an MCP tool is `fetch` when its name says so, else `other`."""

WRITES = frozenset({"write_file", "edit_file"})
OUTPUT_SHOWN = 8000
"""Characters of a call's output a client is sent (the newest): a test run can print megabytes."""


def kind_of(name: str) -> ToolKind:
    if name in KINDS:
        return KINDS[name]
    return "fetch" if "fetch" in name.lower() else "other"


def title_of(name: str, arguments: dict[str, object]) -> str:
    path = arguments.get("path")
    return f"{name} {path}" if isinstance(path, str) and path else name


def _tail(text: str) -> str:
    return text if len(text) <= OUTPUT_SHOWN else "…" + text[-OUTPUT_SHOWN:]


def read_text(path: Path) -> str | None:
    """A file's text, None when it is not there or not text (a diff then shows a new file)."""
    with contextlib.suppress(OSError, UnicodeDecodeError):
        return path.read_text(encoding="utf-8")
    return None


def committed_text(workdir: Path, path: Path) -> str | None:
    """`path` as HEAD of the repository at `workdir` has it; None when it has not (or is no
    text)."""
    data = committed_blob(workdir, path)
    with contextlib.suppress(UnicodeDecodeError):
        return data.decode("utf-8") if data is not None else None
    return None


@dataclass
class _Call:
    name: str
    before: str | None = None
    output: str = ""


@dataclass
class ToolCalls:
    """The tool calls of one run as the client has seen them so far."""

    workdir: Path
    _calls: dict[str, _Call] = field(default_factory=dict)
    _seen: dict[Path, str] = field(default_factory=dict)
    """Each written file's text as read when its last write ended."""

    def _path(self, arguments: dict[str, object]) -> Path | None:
        path = arguments.get("path")
        if not isinstance(path, str) or not path:
            return None
        return (self.workdir / path).resolve()

    def _locations(self, arguments: dict[str, object]) -> list[ToolCallLocation] | None:
        path = self._path(arguments)
        return [ToolCallLocation(path=str(path))] if path is not None else None

    def started(self, event: ev.ToolStarted) -> list[Update]:
        """Pending, then at once in progress: the run starts a call as it announces it."""
        call = self._calls[event.tool_use_id] = _Call(event.name)
        path = self._path(event.arguments)
        if event.name in WRITES and path is not None:
            call.before = read_text(path)
        return [
            start_tool_call(
                event.tool_use_id,
                title_of(event.name, event.arguments),
                kind=kind_of(event.name),
                status="pending",
                locations=self._locations(event.arguments),
                raw_input=event.arguments,
            ),
            update_tool_call(event.tool_use_id, status="in_progress"),
        ]

    def output(self, event: ev.ToolOutput) -> list[Update]:
        """Live output goes to the newest running call of that tool (output names no call)."""
        for use_id, call in reversed(self._calls.items()):
            if call.name == event.name:
                call.output += event.text
                content = [tool_content(text_block(_tail(call.output)))]
                return [update_tool_call(use_id, content=content)]
        return []

    def finished(self, event: ev.ToolFinished) -> list[Update]:
        status: ToolCallStatus = "failed" if event.is_error else "completed"
        call = self._calls.pop(event.tool_use_id, None)
        content = self._content(event, call)
        if call is None:  # replayed from a log: never announced
            return [
                start_tool_call(
                    event.tool_use_id,
                    title_of(event.name, event.arguments),
                    kind=kind_of(event.name),
                    status=status,
                    content=content,
                    locations=self._locations(event.arguments),
                    raw_input=event.arguments,
                    raw_output=event.result,
                )
            ]
        return [
            update_tool_call(
                event.tool_use_id, status=status, content=content, raw_output=event.result
            )
        ]

    def _content(
        self, event: ev.ToolFinished, call: _Call | None
    ) -> list[ContentToolCallContent | FileEditToolCallContent]:
        """A write that succeeded is its diff (the result text after it); else the result."""
        shown: list[ContentToolCallContent | FileEditToolCallContent] = []
        path = self._path(event.arguments)
        if call is not None and event.name in WRITES and path is not None and not event.is_error:
            after = read_text(path)
            if after is not None:
                before = call.before
                if before == after:  # read after the write, or a write that changed nothing
                    before = self._seen.get(path) or committed_text(self.workdir, path)
                self._seen[path] = after
                shown.append(tool_diff_content(str(path), after, before))
        if event.result:
            shown.append(tool_content(text_block(_tail(event.result))))
        return shown


def checks_call(number: int, event: ev.ChecksRan) -> ToolCallStart:
    """The runner's own build and test run: a tool call of its own, already ended."""
    lines = [
        f"{c.kind}: {' '.join(c.argv)} → exit {c.exit_code}\n{c.tail}".rstrip()
        for c in event.checks
    ]
    counted = f"\n{event.tests_ran} tests ran" if event.tests_ran is not None else ""
    return start_tool_call(
        f"cardrunner-checks-{number}",
        f"runner's checks ({event.phase.replace('_', ' ')})",
        kind="execute",
        status="completed" if event.ok else "failed",
        content=[tool_content(text_block(_tail("\n\n".join(lines) + counted)))],
        raw_output={"ok": event.ok, "tests_ran": event.tests_ran, "tree": event.tree},
    )
