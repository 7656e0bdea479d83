"""One run from start to end: the only place where a run's end becomes its `RunFinished`.

`RunSession.events()` prepares the run (model, resume, sweep), takes the card's lock, calls the
front end's preflight if any (`RunOptions.preflight`: CI makes the card's branch), assembles it
(card, work area, tools, MCP servers, loop, log), moves the card to `In Work`, plays the loop
and — however the run ends: a result, a limit, an error, cancellation, a crashing tool, a
refusal while preparing or in the preflight — stops the app and the MCP servers, keeps or undoes
the run's changes, writes the result to the log and the card, and yields exactly one
`RunFinished`, last. Every event goes to the run log first, then to the caller, who only
subscribes (the CLI, the editor's run manager, the CI branch run, the demo).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path

from cardrunner.agent.events import ChecksRan, Event, Notice, RunFinished, Usage
from cardrunner.agent.limits import cost_basis
from cardrunner.card.record import CardUpdate, FailureReason, RunRecord
from cardrunner.config.secrets import shown_model
from cardrunner.processes.refusal import refusals
from cardrunner.run.assembly import OpenRun, open_run, relative
from cardrunner.run.cardcommit import commit_card_state
from cardrunner.run.liveness import CardBusy, CardLock, clear_live, interrupted_by, mark_live
from cardrunner.run.options import RunOptions, RunRefused
from cardrunner.run.prepare import prepare_run


class RunSession:
    """Owns one run: what it opened, how far it got, and how it ended.

    Each stage records what it opened (`_lock`, `_run`, `_in_work`, `_live`), so the one `finally` closes
    exactly what is open, in reverse, whatever went wrong in between."""

    def __init__(self, options: RunOptions) -> None:
        self.options = options
        self._stack = AsyncExitStack()
        self._run: OpenRun | None = None
        self._in_work = False
        self._live: Path | None = None
        self._lock: CardLock | None = None
        self._result: RunFinished | None = None

    @property
    def ending(self) -> bool:
        """How the run ended is decided, and it is closing (or closed): a cancel now would only
        cut short what it still has to do — stop its processes, write its log and its card."""
        return self._result is not None

    async def events(self) -> AsyncGenerator[Event, None]:
        """Every event of the run, ending with its one `RunFinished`."""
        try:
            async for event in self._play():
                yield shown_model(event)  # logged raw; shown without controls or secrets
        except RunRefused as exc:
            self._end("config_error", str(exc))
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            started = self._run is not None
            why = interrupted_by(exc)  # the editor went away: resumable, not the user's cancel
            if why is not None:
                self._end("interrupted", why)
            else:
                self._end(
                    "cancelled", "the run was cancelled" + ("" if started else " before it started")
                )
        except OSError as exc:  # the log could not be written (disk full …): stop, keep the card
            self._end("interrupted", f"cannot write the run log: {exc}")
        except Exception as exc:  # a bug in the loop or a tool's event: end cleanly, resumable
            self._end("interrupted", f"the run crashed: {type(exc).__name__}: {exc}")
        finally:
            closing = await self._close()
        for event in closing:
            yield shown_model(event)

    async def _play(self) -> AsyncIterator[Event]:
        """Prepare, lock, preflight, assemble, start, then the loop's events, logged; the loop's
        result is kept."""
        o = self.options
        prepared = await prepare_run(o)
        try:  # one run per card, across processes: held until the card says how it ended
            self._lock = await asyncio.to_thread(CardLock.acquire, o.root, o.card_path, o.run_id)
        except CardBusy as exc:
            raise RunRefused(str(exc)) from exc
        notes = await o.preflight() if o.preflight is not None else []  # may refuse
        run = self._run = await open_run(prepared, self._stack)
        await asyncio.to_thread(self._lock.record, run.run_id)
        self._in_work = True  # first: a stop during the write below still ends the card's run
        try:
            await o.card_store.update(run.card.path, CardUpdate(state="In Work", reason=None))
        except Exception:
            self._in_work = False  # the card was not moved: leave it as it was
            raise
        self._live = mark_live(o.root, run.run_id, run.started.card)
        opening: list[Event] = [run.started]
        opening += [Notice(level="warning", message=w) for w in run.started.warnings]
        opening += [Notice(message=n) for n in [*run.area.notes, *notes]]
        for event in opening:
            run.log.write(event)
            yield event
        if run.checks.baseline is None and (
            ran := await run.checks.run_baseline(run.area.base_tree)
        ):
            run.log.write(ran)
            yield ran
            for notice in _refused(ran, run.area.root):
                run.log.write(notice)
                yield notice
        async with contextlib.aclosing(run.loop.run()) as events:
            async for event in events:
                if isinstance(event, RunFinished):
                    self._result = event
                    return
                run.log.write(event)
                yield event

    def _end(self, reason: FailureReason, detail: str) -> None:
        """Record a failure the loop did not report itself (it keeps the run's counts so far)."""
        if self._run is not None:
            self._result = self._run.loop.finish("failed", reason, detail)
        else:
            self._result = RunFinished(
                status="failed",
                reason=reason,
                detail=detail,
                rounds=0,
                tool_calls=0,
                usage=Usage(),
                cost_usd=0.0,
            )

    async def _close(self) -> list[Event]:
        """Close what is open, record the result; the events still to yield (the result last)."""
        if self._result is None:
            self._end("interrupted", "the loop ended without a result")
        assert self._result is not None
        result, notes = self._result, []
        try:  # app, MCP servers: stopped before the card says the run is over
            await self._stack.aclose()
        except Exception as exc:
            notes.append(f"could not stop the run's processes: {type(exc).__name__}: {exc}")
        run = self._run
        if run is not None:
            taken = ""
            try:
                result, taken = await _no_commit_unless_done(run, result)
                result, note = _same_commit_in_ledger(result, *await run.area.finish(result))
            except Exception as exc:  # keeping or undoing changes failed: say so, lose nothing
                note = f"could not tidy up the run's changes: {exc}"
            closing: list[Event] = [Notice(level="info", message=n) for n in notes]
            if taken:
                closing.append(Notice(level="warning", message=taken))
            if note:  # a commit left on its branch needs the user: a warning, not a remark
                level = "warning" if result.unmerged_branch else "info"
                closing.append(Notice(level=level, message=note))
            with contextlib.suppress(OSError):
                for event in [*closing, result]:
                    run.log.write(event)
            run.log.close()
            if self._in_work:
                closing += await self._write_card(run, result)
        self.options.processes.close()  # nothing should be left; if something is, it dies here
        if self._live is not None:
            clear_live(self._live)
        if self._lock is not None:
            self._lock.release()
        return [*closing, result] if run is not None else [result]

    async def _write_card(self, run: OpenRun, result: RunFinished) -> list[Event]:
        """The card's new state and the run's record; a notice if the card cannot be written."""
        record = RunRecord(
            id=run.run_id,
            started=RunRecord.started_at(run.started_at),
            result=result.status,
            reason=result.reason,
            rounds=result.rounds,
            tokens=result.usage.total,
            cost_usd=round(result.cost_usd, 4),
            cost_basis=cost_basis(
                result.usage,
                self.options.settings.price(),
                replayed=run.started.model.startswith("replay:"),  # as RunState.replayed
            ),
            commit=result.commit,
            branch=result.unmerged_branch,
            log=relative(run.log.path, self.options.root),
            outcome=result.outcome,
            evidence=[f"{e.index + 1}. {e.line()}" for e in result.ledger] or None,
        )
        state = (
            "Failed"
            if result.status == "failed"
            else "Review"  # verified, not committed: the user has the last word
            if result.unmerged_branch or result.status == "verified"
            else "Done"
        )
        change = CardUpdate(state=state, reason=result.reason, run=record)
        try:
            await self.options.card_store.update(run.card.path, change)
        except Exception as exc:
            return [
                Notice(level="warning", message=f"could not write the result to the card: {exc}")
            ]
        if not self.options.commit_card_state:
            return []
        rel = relative(run.card.path, self.options.root)
        note = await commit_card_state(run.area.main, rel, run.card, change)
        return [Notice(level="warning", message=note)] if note else []


async def _no_commit_unless_done(run: OpenRun, result: RunFinished) -> tuple[RunFinished, str]:
    """A run that does not end Done leaves no commit on the user's branch, `--yes` or not.

    The review is accepted (and, in the checkout, committed) while the run goes on; the verdict
    comes after it, and may still find the run Failed (evidence refused, a change after the
    commit). Then the commit is taken back off the branch, the write area is put back as the
    run found it, and the commit is kept on `cardrunner/<run id>` for the user to take or drop.
    An isolated run's commit never reached the user's branch unless Done (`WorkArea.finish`)."""
    sha = result.commit
    if result.status == "done" or not sha or run.area.worktree is not None:
        return result, ""
    keep = f"cardrunner/{run.run_id}"
    parent = await run.area.main.take_back(sha, keep, run.area.paths)
    if parent is None:
        return result, (
            f"the run did not end Done, but its commit {sha[:10]} stays on your branch: "
            "HEAD has moved past it since; revert it yourself if you do not want it"
        )
    work = await run.area.main.snapshot(run.area.paths)  # a resume brings the files back
    await run.area.main.restore(run.area.base_tree, run.area.paths)
    note = (
        f"the run did not end Done, so its commit {sha[:10]} was taken off your branch (HEAD "
        f"is back at {parent[:10]}, the write area as the run found it); the commit is kept on "
        f"the branch {keep} (`git cherry-pick {keep}` takes it, `git branch -D {keep}` drops it)"
    )
    return result.model_copy(update={"commit": None, "kept_branch": keep, "work_tree": work}), note


def _same_commit_in_ledger(
    before: RunFinished, after: RunFinished, note: str
) -> tuple[RunFinished, str]:
    """A commit brought onto the user's branch gets a new id: the ledger names that one."""
    if not (before.commit and after.commit and before.commit != after.commit):
        return after, note
    ledger = [
        e.model_copy(update={"commit": after.commit}) if e.commit == before.commit else e
        for e in after.ledger
    ]
    return after.model_copy(update={"ledger": ledger}), note


def run_card(options: RunOptions) -> AsyncIterator[Event]:
    """The events of one run of `options` (a `RunSession`); always ends with one `RunFinished`."""
    return RunSession(options).events()


def _refused(ran: ChecksRan, root: Path) -> list[Notice]:
    """The baseline's sandbox refusals, named with their fix: a failing baseline that says only
    `test exit 1` leaves the user guessing that the sandbox was in the way."""
    return [
        Notice(level="warning", message=f"the runner's {check.kind} at the start: {refusal}")
        for check in ran.checks
        if not check.ok
        for refusal in refusals(check.tail, root)
    ]
