"""One card run, assembled: the composition root between the loop and the outside world.

`run_card` loads the card and settings, refuses to start over the user's uncommitted work,
records the write area, builds the tool pool (files, commands, evidence, commit, MCP), moves the
card to `In Work`, plays the loop, and — however the run ends, cancellation included — stops the
app and the MCP servers, writes the result to the card and closes the log. Every event goes to
the run log first, then to the caller, who only subscribes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from cardrunner.agent.compaction import Compactor
from cardrunner.agent.events import Event, Notice, RunFinished, RunStarted
from cardrunner.agent.gate import ToolPool
from cardrunner.agent.limits import Guards
from cardrunner.agent.loop import Loop
from cardrunner.agent.model import Message
from cardrunner.agent.verdict import RunVerdict
from cardrunner.card.card import Card, CardError, load_card
from cardrunner.run.liveness import clear_live, mark_live
from cardrunner.run.log import RunLog, runs_dir
from cardrunner.run.prepare import RunOptions
from cardrunner.run.workarea import WorkArea, WorkAreaError
from cardrunner.tools.commands import AppProcess, command_tools
from cardrunner.tools.commit import CommitTool
from cardrunner.tools.evidence import Evidence
from cardrunner.tools.files import PathGuard, file_tools

if TYPE_CHECKING:
    pass

INSTRUCTIONS = Path(__file__).parent.parent / "agent" / "instructions.md"


class SetupError(Exception):
    """The run cannot start; the message says why and what to do."""


def new_run_id(card: Card) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{card.slug}"[:80]


def command_env(run_dir: Path) -> dict[str, str]:
    """Commands find the interpreter that runs cardrunner first on PATH (`python` in argv)."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return {"PATH": path, "CARDRUNNER_RUN_DIR": str(run_dir)}


@dataclass
class _Run:
    card: Card
    run_id: str
    log: RunLog
    loop: Loop
    started: RunStarted
    started_at: datetime
    area: WorkArea
    result: RunFinished | None = None


async def run_card(o: RunOptions) -> AsyncIterator[Event]:
    """Run one card to its end, yielding every event. Always ends with one `RunFinished`."""
    async with AsyncExitStack() as stack:
        try:
            run = await _prepare(o, stack)
        except SetupError as exc:
            yield RunFinished(
                status="failed",
                reason="config_error",
                detail=str(exc),
                rounds=0,
                tool_calls=0,
                input_tokens=0,
                output_tokens=0,
                cost_usd=0.0,
            )
            return
        live = mark_live(o.root, run.run_id, run.started.card)
        try:
            async for event in _play(run, stack):
                yield event
            result = run.result
            assert result is not None  # _play always sets it
            try:
                result, note = await run.area.finish(result)
            except Exception as exc:  # keeping or undoing changes failed: say so, lose nothing
                note = f"could not tidy up the run's changes: {exc}"
            if note:
                notice = Notice(level="info", message=note)
                with contextlib.suppress(OSError):
                    run.log.write(notice)
                yield notice
            with contextlib.suppress(OSError):
                run.log.write(result)
        finally:
            run.log.close()
        await _write_result(o, run, result)
        clear_live(live)
        yield result


async def _play(run: _Run, stack: AsyncExitStack) -> AsyncIterator[Event]:
    """The loop's events, logged; sets `run.result`. Cancellation and log failures end it too."""
    try:
        opening: list[Event] = [run.started]
        opening += [Notice(level="warning", message=w) for w in run.started.warnings]
        for event in opening:
            run.log.write(event)
            yield event
        async with contextlib.aclosing(run.loop.run()) as events:
            async for event in events:
                if isinstance(event, RunFinished):
                    run.result = event
                    break
                run.log.write(event)
                yield event
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        run.result = run.loop.finish("failed", "cancelled", "the run was cancelled")
    except OSError as exc:  # the log could not be written (disk full …): stop, keep the card
        run.result = run.loop.finish("failed", "interrupted", f"cannot write the run log: {exc}")
    except Exception as exc:  # a bug in the loop or a tool's event: end cleanly, resumable
        detail = f"the run crashed: {type(exc).__name__}: {exc}"
        run.result = run.loop.finish("failed", "interrupted", detail)
    finally:
        await stack.aclose()  # app, MCP servers: stopped before the card says the run is over
    if run.result is None:
        run.result = run.loop.finish("failed", "interrupted", "the loop ended without a result")


async def _prepare(o: RunOptions, stack: AsyncExitStack) -> _Run:
    s, resume = o.settings, o.resume
    try:
        card = await asyncio.to_thread(load_card, o.card_path)
    except CardError as exc:
        raise SetupError(str(exc)) from exc
    try:
        area = await WorkArea.open(
            o.root,
            s.paths.write,
            card.slug,
            isolation=bool(s.isolation),
            resume_base=resume.base_tree if resume else None,
            resume_work=resume.work_tree if resume else None,
        )
    except WorkAreaError as exc:
        raise SetupError(str(exc)) from exc
    run_id = resume.run_id if resume else (o.run_id or new_run_id(card))
    run_dir = runs_dir(o.root) / run_id
    await asyncio.to_thread(run_dir.mkdir, parents=True, exist_ok=True)
    limits = resume.limits if resume else s.limits
    guards = Guards(limits, s.price())
    evidence = Evidence(card.criteria)
    if resume:
        guards.rounds, guards.usage, guards.cost_usd = resume.rounds, resume.usage, resume.cost_usd
        guards.tool_calls, guards.wall_offset = resume.tool_calls, resume.elapsed
        evidence.reports.update(resume.reports)
    app = AppProcess()
    stack.push_async_callback(app.aclose)
    commit = CommitTool(
        git=area.git,
        approver=o.approver,
        write_paths=s.paths.write,
        base_tree=area.base_tree,
        run_id=run_id,
        card_title=card.title,
        card_path=card.path,
        card_slug=card.slug,
        trailers=lambda: {
            "Card": card.slug,
            "Run": run_id,
            "Rounds": str(guards.rounds),
            "Cost": f"${guards.cost_usd:.2f}",
        },
    )
    pool = ToolPool(
        [
            *file_tools(PathGuard(area.root, s.paths.read, s.paths.write)),
            *command_tools(area.root, s.commands, app, command_env(run_dir)),
            evidence.tool(),
            commit.tool(),
        ]
    )
    warnings = await _add_mcp_tools(o, pool, area.root, run_dir, stack)
    system = INSTRUCTIONS.read_text(encoding="utf-8")
    prompt = resume.prompt if resume else card.prompt()
    messages = resume.messages if resume else [Message("user", [{"type": "text", "text": prompt}])]
    overhead = (len(system) + len(json.dumps(pool.specs()))) // 4
    loop = Loop(
        system=system,
        model=o.model,
        pool=pool,
        guards=guards,
        verdict=RunVerdict(commit, evidence, s.require_evidence),
        options=s.options,
        messages=messages,
        compactor=Compactor(
            s.options.context_window, s.options.compact_at, s.options.keep_tool_results, overhead
        ),
    )
    log = RunLog(runs_dir(o.root) / f"{run_id}.jsonl")
    started = RunStarted(
        run_id=run_id,
        card=_rel(card.path, o.root),
        title=card.title,
        model=o.model.name,
        tools=pool.names,
        limits=limits.model_dump(),
        criteria=card.criteria,
        warnings=warnings,
        resumed_from_round=resume.rounds if resume else 0,
        prompt=prompt,
        base_tree=area.base_tree,
        workdir=str(area.root),
    )
    try:
        await o.card_store.update(card.path, state="In Work", reason=False)
    except Exception:
        log.close()
        raise
    return _Run(card, run_id, log, loop, started, datetime.now(UTC), area)


async def _add_mcp_tools(
    o: RunOptions, pool: ToolPool, workdir: Path, run_dir: Path, stack: AsyncExitStack
) -> list[str]:
    if not o.settings.mcp:
        return []
    from cardrunner.tools.mcp.hub import McpHub, McpStartError

    hub = McpHub(o.settings.mcp, run_dir=run_dir, root=workdir)
    stack.push_async_callback(hub.aclose)
    try:
        await hub.start()
    except McpStartError as exc:
        raise SetupError(str(exc)) from exc
    warnings = list(hub.warnings)
    warnings += [f"MCP server {name!r} did not start: {why}" for name, why in hub.failures.items()]
    for tool in hub.tools():
        if not pool.add(tool):
            warnings.append(f"MCP tool {tool.name} skipped: a built-in tool has that name")
    return warnings


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


async def _write_result(o: RunOptions, run: _Run, result: RunFinished) -> None:
    entry = {
        "id": run.run_id,
        "started": run.started_at.isoformat(timespec="seconds").replace("+00:00", "Z"),
        "result": result.status,
        "reason": result.reason,
        "rounds": result.rounds,
        "tokens": result.total_tokens,
        "cost_usd": round(result.cost_usd, 4),
        "commit": result.commit,
        "log": _rel(run.log.path, o.root),
    }
    state = "Done" if result.status == "done" else "Failed"
    reason: str | Literal[False] = result.reason or False
    with contextlib.suppress(OSError):
        await o.card_store.update(run.card.path, state=state, reason=reason, run=entry)
