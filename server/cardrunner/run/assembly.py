"""Assembling one prepared run: card, work area, tools, MCP servers, loop, log.

This is the composition root between the loop and the outside world: every port the loop talks
through gets its production implementation here. It only builds; the run's session decides
when, and owns whatever this opens (`stack` receives every cleanup).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cardrunner.agent.compaction import Compactor
from cardrunner.agent.events import RunStarted
from cardrunner.agent.limits import Guards
from cardrunner.agent.loop import Loop
from cardrunner.agent.model import Message
from cardrunner.agent.toolpool import Tool, ToolPool
from cardrunner.apirules.binding import binds_thinking
from cardrunner.card.card import Card, CardError, card_key, card_slug, load_card
from cardrunner.card.record import usd
from cardrunner.config.paths import StatePaths
from cardrunner.processes.liveapp import AppProcess
from cardrunner.processes.sandbox import (
    Sandbox,
    SandboxUnavailable,
)
from cardrunner.record.log import RunLog, new_run_id
from cardrunner.run.options import RunRefused
from cardrunner.run.prepare import (
    PreparedRun,
    Restored,
    Told,
    api_model,
    app_prompt,
    fits_window,
    old_log_warning,
    review_prompt,
    told_for,
)
from cardrunner.run.resume import carry_over, what_changed
from cardrunner.run.verdict import RunVerdict
from cardrunner.run.workarea import WorkArea, WorkAreaError, command_env, open_sandbox
from cardrunner.tools.commands import command_tools, restarting
from cardrunner.tools.commit import CommitTool, ReviewSoFar
from cardrunner.tools.evidence import Evidence
from cardrunner.tools.files import file_tools
from cardrunner.tools.guard import PathGuard
from cardrunner.verify.builds import RunnerChecks
from cardrunner.verify.calls import CallLog, GitAreaState, OutsideWatch
from cardrunner.verify.hooks import CommitHooks
from cardrunner.verify.observed import Witnesses

INSTRUCTIONS = Path(__file__).parent.parent / "agent" / "instructions.md"


@dataclass
class OpenRun:
    """A run ready to play: what the session needs to start, end and record it."""

    card: Card
    run_id: str
    area: WorkArea
    loop: Loop
    log: RunLog
    started: RunStarted
    started_at: datetime
    checks: RunnerChecks


async def open_run(prepared: PreparedRun, stack: AsyncExitStack) -> OpenRun:
    """Build every part of the run; raises RunRefused when the card or the work area cannot do."""
    o, resume = prepared.options, prepared.resume
    run_id = resume.run_id if resume else (o.run_id or new_run_id(o.root, o.card_path))
    card, area = await _card_and_area(prepared, run_id)
    paths = StatePaths(o.root).ensure()
    run_dir = paths.run_dir(run_id)
    await asyncio.to_thread(run_dir.mkdir, parents=True, exist_ok=True)
    limits = resume.limits if resume else o.settings.limits
    s = o.settings
    was = Restored.of(resume)
    guards = Guards(limits, s.price(), was.spent)
    sandbox, sandbox_notes = await _sandbox(prepared, area, run_dir, stack)
    checks = RunnerChecks(
        area.root,
        s.commands,
        o.processes,
        command_env(run_dir),
        sandbox,  # the runner's own build and tests run confined like the model's
        count=s.require_evidence,
        so_far=was.checks,
    )
    calls = CallLog(GitAreaState(area.git, s.paths.write), area.base_tree, was.calls)
    await calls.start()
    evidence = Evidence(
        card.criteria,
        calls,
        s.require_evidence,
        run_dir / "evidence",
        o.root.resolve(),
        was.evidence,
        witnesses=Witnesses.of(s.mcp, bool(s.commands.app), s.commands.app_url),
    )
    hooks = CommitHooks(area.git, checks, run_dir) if s.git.hooks else None
    outside = await OutsideWatch.take(area.git, s.paths.write, _cards_of(prepared), card.path)
    commit = _commit_tool(
        prepared, card, area, run_id, guards,
        calls=calls, checks=checks, evidence=evidence, hooks=hooks, outside=outside,
        so_far=was.review,
    )  # fmt: skip
    extra = [evidence.tool(), commit.tool()]
    pool, warnings = await _tool_pool(prepared, area, run_dir, stack, extra, sandbox, calls)
    private = sandbox.shared is not None
    told_app = app_prompt(s.commands, private)
    prompt = resume.prompt if resume else card.prompt() + review_prompt(o.review) + told_app
    verdict = RunVerdict(
        evidence, s.require_evidence, s.verify_attempts, review=commit, checks=checks, calls=calls
    )
    told = await asyncio.to_thread(told_for, prepared, card, area.root, run_dir)
    loop = fits_window(prepared, _loop(prepared, pool, guards, verdict, prompt, told))
    warnings = [*prepared.notes, *told.notes, *sandbox_notes, *warnings, *old_log_warning(prepared)]
    shape = await area.main.shape()
    started = _started(
        prepared, run_id, card, area, loop, pool.names, warnings, told, prompt, shape
    )
    log = RunLog(paths.log(run_id))
    return OpenRun(card, run_id, area, loop, log, started, datetime.now(UTC), checks)


def _started(
    prepared: PreparedRun,
    run_id: str,
    card: Card,
    area: WorkArea,
    loop: Loop,
    tools: list[str],
    warnings: list[str],
    told: Told,
    prompt: str,
    checkout: str,
) -> RunStarted:
    """The run's `start` event: what the log keeps so the run can be told and resumed exactly."""
    o, resume = prepared.options, prepared.resume
    limits = resume.limits if resume else o.settings.limits
    return RunStarted(
        run_id=run_id,
        card=relative(card.path, o.root),
        title=card.title,
        model=prepared.model.name,
        tools=tools,
        limits=limits.model_dump(),
        criteria=card.criteria,
        warnings=warnings,
        instructions=told.instructions,
        images=told.images,
        resumed_from_round=resume.rounds if resume else 0,
        prompt=prompt,
        system=loop.system,
        tool_specs=loop.tools or [],
        paths=o.settings.paths.model_dump(),
        base_tree=area.base_tree,
        workdir=str(area.root),
        checkout=checkout,
        package=prepared.package,
    )


def _cards_of(prepared: PreparedRun) -> list[str]:
    """The cards folder and the card: cardrunner writes them, no tool of the model may."""
    o = prepared.options
    return [o.settings.cards, relative(o.card_path, o.root)]


async def _card_and_area(prepared: PreparedRun, run_id: str) -> tuple[Card, WorkArea]:
    """The card, and where the run works; RunRefused when either cannot be had. A resume's
    fingerprints are carried onto that work area's HEAD (`carry_over`)."""
    o, resume = prepared.options, prepared.resume
    try:
        card = await asyncio.to_thread(load_card, o.card_path)
        area = await WorkArea.open(
            o.root,
            o.settings.paths.write,
            run_id,
            isolation=bool(o.settings.isolation),
            resume_base=resume.base_tree if resume else None,
            resume_work=resume.work_tree if resume else None,
            build_output=o.settings.paths.build_output,
            card=card_slug(o.card_path, o.root),
        )
    except (CardError, WorkAreaError) as exc:
        raise RunRefused(str(exc)) from exc
    if resume:  # what the log fingerprinted, on the branch the resumed run works on
        await carry_over(resume, area.git, o.settings.paths.write)
    return card, area


def _commit_tool(
    prepared: PreparedRun,
    card: Card,
    area: WorkArea,
    run_id: str,
    guards: Guards,
    *,
    calls: CallLog,
    checks: RunnerChecks,
    evidence: Evidence,
    hooks: CommitHooks | None,
    outside: OutsideWatch,
    so_far: ReviewSoFar,
) -> CommitTool:
    """`git_commit` for this run; its trailers name the card, the run and what it cost so far
    (`~$0.07 (estimate)` for a replay, as every view says it)."""
    replayed = prepared.model.name.startswith("replay:")  # as RunState.replayed
    slug = card_slug(card.path, prepared.options.root)
    return CommitTool(
        git=area.git,
        approver=prepared.options.approver,
        write_paths=prepared.options.settings.paths.write,
        base_tree=area.base_tree,
        run_id=run_id,
        card_title=card.title,
        card_path=card.path,
        card_slug=slug,
        ignored_at_start=area.ignored_at_start,
        trailers=lambda: {
            "Card": slug,
            "Run": run_id,
            "Rounds": str(guards.rounds),
            "Cost": usd(guards.cost_usd, 2, estimate=guards.usage.estimated or replayed),
        },
        calls=calls,
        checks=checks,
        evidence=evidence,
        hooks=hooks,
        outside=outside,
        so_far=so_far,
    )


async def _tool_pool(
    prepared: PreparedRun,
    area: WorkArea,
    run_dir: Path,
    stack: AsyncExitStack,
    extra: Sequence[Tool],
    sandbox: Sandbox,
    calls: CallLog,
) -> tuple[ToolPool, list[str]]:
    """Files, commands, `extra` and every MCP server's tools behind the one gate (`calls`
    records every call through it), with warnings."""
    s = prepared.options.settings
    guard = PathGuard(area.root, s.paths.read, s.paths.write, cards=_cards_of(prepared))
    await _refuse_uncommitted_config(area, guard)
    outside = any(m.url for m in s.mcp.values()) and sandbox.shared is not None
    app = AppProcess(prepared.options.processes, forward=outside and bool(s.commands.app_url))
    stack.push_async_callback(app.aclose)
    # the client's buffers are of the checkout: a run in a worktree reads its own files
    source = prepared.options.read_text if area.worktree is None else None
    pool = ToolPool(
        [
            *restarting(
                file_tools(guard, timeout=s.tool_timeout_seconds, source=source), app, s.commands
            ),
            *command_tools(area.root, s.commands, app, command_env(run_dir), sandbox, guard),
            *extra,
        ],
        observers=[calls],
    )
    if not s.mcp:
        return pool, []
    from cardrunner.tools.mcp.hub import McpHub, McpStartError

    hub = McpHub(
        s.mcp, run_dir=run_dir, root=area.root, groups=prepared.options.processes, sandbox=sandbox
    )
    stack.push_async_callback(hub.aclose)
    try:
        await hub.start()
    except McpStartError as exc:
        raise RunRefused(str(exc)) from exc
    warnings = list(hub.warnings)
    warnings += [f"MCP server {name!r} did not start: {why}" for name, why in hub.failures.items()]
    for tool in hub.tools():
        if not pool.add(tool):
            warnings.append(f"MCP tool {tool.name} skipped: a built-in tool has that name")
    return pool, warnings


SETTINGS_FILES = ("cardrunner.toml", ".mcp.json", "pyproject.toml")


async def _refuse_uncommitted_config(area: WorkArea, guard: PathGuard) -> None:
    """Settings a run could have written take effect only once accepted and committed.

    The dirty-tree check misses two ways in: a resume (which skips it) and a settings file
    git ignores. Files outside the write area cannot have come from a run and are left alone.
    """
    if area.worktree is not None:  # settings come from the user's checkout, never the worktree
        return
    names = [name for name in SETTINGS_FILES if guard.is_writable(name)]
    dirty = await area.main.dirty_files(names, ignored=True) if names else []
    if dirty:
        raise RunRefused(
            f"{', '.join(dirty)} differs from the last commit and lies in the write area, where "
            "a run could have written it. Settings written by a run take effect only after "
            "they were reviewed and committed: commit or restore it first."
        )


async def _sandbox(
    prepared: PreparedRun, area: WorkArea, run_dir: Path, stack: AsyncExitStack
) -> tuple[Sandbox, list[str]]:
    """The run's sandbox (run/workarea.py), closed with the run after all it started, and its
    warning; RunRefused where it cannot start or would let the tests import the checkout."""
    o = prepared.options
    try:
        box, notes = await asyncio.to_thread(
            open_sandbox, o.settings, o.root, area, run_dir, o.processes
        )
    except (SandboxUnavailable, WorkAreaError) as exc:
        raise RunRefused(str(exc)) from exc
    stack.callback(box.close)
    return box, notes


def _loop(
    prepared: PreparedRun,
    pool: ToolPool,
    guards: Guards,
    verdict: RunVerdict,
    prompt: str,
    told: Told,
) -> Loop:
    """The agent loop over this run's ports, with the conversation so far (or the card)."""
    settings = prepared.options.settings
    o = settings.effective_options(api_model(prepared.model))
    system, tools, messages = _conversation(prepared, pool, prompt, told)
    overhead = (len(system) + len(json.dumps(tools))) // 4
    return Loop(
        system=system,
        model=prepared.model,
        pool=pool,
        guards=guards,
        verdict=verdict,
        options=o,
        messages=messages,
        compactor=Compactor(
            o.context_window or 1_000_000, o.compact_at, o.keep_tool_results, overhead
        ),
        tools=tools,
        output_ceiling=settings.model_spec(api_model(prepared.model)).max_output_tokens,
        system_messages=binds_thinking(api_model(prepared.model)),
    )


def _conversation(
    prepared: PreparedRun, pool: ToolPool, prompt: str, told: Told
) -> tuple[str, list[dict[str, Any]], list[Message]]:
    """`system`, `tools` and the messages. Built once per run; a resume takes the run's own
    from its log (append-only: today's settings never rewrite what was sent, since `system`
    and `tools` are every thinking block's prefix) and tells the model what changed since."""
    resume = prepared.resume
    if resume is None:
        first = Message("user", [{"type": "text", "text": prompt}, *told.blocks])
        return INSTRUCTIONS.read_text(encoding="utf-8") + told.system, pool.specs(), [first]
    system = resume.system or INSTRUCTIONS.read_text(encoding="utf-8")
    tools = resume.tools or pool.specs()
    paths = prepared.options.settings.paths.model_dump()
    if changed := what_changed(resume, pool.specs(), paths):
        resume.messages[-1].content.append({"type": "text", "text": changed})
    return system, tools, resume.messages


def relative(path: Path, root: Path) -> str:
    """`path` relative to the workspace root as the log and the card record it (`card_key`)."""
    return card_key(path, root)
