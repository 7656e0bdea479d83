"""A card run as one CI job: its own branch, one commit, a push, a pull-request body.

On CI the human review moves to the pull request, so the run is the ordinary lifecycle
(`run_card`) with three things around it. Before, as the session's preflight: a branch
`cards/<slug>` (the card's identity, `card_slug`) is made from the current commit — refused,
before any money is spent, if the remote has that branch already, something is staged or the
card itself has uncommitted changes (the run's one commit holds the card, so they would be
pushed and then vanish from this checkout); the session ends a refusal like any
other (one `RunFinished`, `config_error`, the card untouched). After a Done run: the run's
commit and the card's new state become one commit (a reviewer sees the change and the card
moving to Done together, and a squash or rebase merge keeps them together), which is pushed as
a new branch, never forced. Then the checkout goes back where it was. A failed run pushes
nothing; the body says why. Nothing is merged by cardrunner.

A run that continues from its pull request's review (`continues`, `board/pullreview.py`) takes
the card's branch from the remote instead, exactly at the reviewed commit (refused if the
branch moved since), gives the model the review with the card, and adds its one commit on top
of that head: the push is a fast-forward of the pull request's branch, never forced.

The card's run record on the branch has no `commit`: a commit cannot name itself, and the sha
changes anyway when the pull request is squashed or rebased. The `Card:` and `Run:` trailers
of the commit link it to the card and the run log instead, and the record's other trailers
(`Result:`, `Rounds:`, … as in a local run's card commit) keep the card's history in git.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from cardrunner.agent.events import Event, Notice, RunFinished
from cardrunner.agent.review import ReviewDecision, ReviewRequest
from cardrunner.board.prbody import REVIEW_ON_PR, RunReport, pr_body, with_ledger
from cardrunner.board.pullreview import PullReview
from cardrunner.card.card import Card, CardError, CardStore, card_key, card_slug, load_card
from cardrunner.card.record import CardUpdate
from cardrunner.config.paths import StatePaths
from cardrunner.git.branches import BranchRepo, StartPoint
from cardrunner.git.repo import GitError
from cardrunner.record.state import RunState
from cardrunner.run.cardcommit import with_record
from cardrunner.run.options import RunOptions, RunRefused
from cardrunner.run.session import run_card


def ci_confinement_notes(options: RunOptions) -> list[str]:
    """What a CI run does not do that the settings ask for, said rather than done silently.

    `isolation = true` (the run in a git worktree of its own) is not kept: a CI run's branch,
    its one folded commit and its push are made in the job's checkout, which is a throwaway copy
    already. The sandbox is not touched by this (it still confines every command, or the run
    refuses); a sandbox the settings turned off is named, because on CI nobody sees the run."""
    notes = []
    if options.settings.isolation:
        notes.append(
            "isolation = true is not used on CI: the run works in the job's own checkout, on "
            "the branch it pushes (the checkout is thrown away with the job); commands still "
            "run in the sandbox"
        )
    if options.settings.sandbox.mode == "off":
        notes.append(
            "sandbox = \"off\": the model's builds and tests ran unconfined, with the job's "
            "rights; review this branch's changes to the build and tests with that in mind"
        )
    return notes


class PullRequestApprover:
    """On CI the review step is the pull request: accept, and say where the review happens."""

    def __init__(self) -> None:
        self.requests: list[ReviewRequest] = []

    async def review(self, request: ReviewRequest) -> ReviewDecision:
        self.requests.append(request)
        return ReviewDecision("accept", reason=REVIEW_ON_PR)


@dataclass
class _UncommittedRecord:
    """Writes the card like the given store, minus the run record's `commit` (see above)."""

    inner: CardStore

    async def update(self, path: Path, change: CardUpdate) -> None:
        run = None if change.run is None else replace(change.run, commit=None)
        await self.inner.update(path, replace(change, run=run))


@dataclass(frozen=True)
class PushTarget:
    """Where a CI run's branch goes and where its pull-request body is written."""

    remote: str = "origin"
    pr_body: Path | None = None


@dataclass
class CiOutcome:
    """What the job did beyond the run: the branch, the pushed commit, or why not."""

    branch: str
    commit: str | None = None
    pushed: bool = False
    why_not_pushed: str = ""
    body: str = ""


@dataclass(frozen=True)
class _Branched:
    """What the preflight made: the run is on `branch` from `base`; the checkout was at `start`
    (where it goes back to). A new branch starts at `start`; a continued one at its head."""

    card: Card
    branch: str
    start: StartPoint
    base: str


@dataclass
class CardBranchRun:
    """One card run on its own branch, ending in a push; `events()` streams it.

    The branch is made in the session's preflight (`RunOptions.preflight`), so a refusal here
    (something staged, the branch taken) ends the run in `RunSession` like every other refusal:
    after the card lock is taken and the run prepared, before anything is written, with the one
    `RunFinished` the session makes. Only a run that got its branch lands (`_land`)."""

    options: RunOptions
    target: PushTarget = field(default_factory=PushTarget)
    continues: PullReview | None = None
    """The pull request's review this run answers, on the card's branch (`--from-review`)."""
    outcome: CiOutcome | None = None
    _branched: _Branched | None = field(default=None, init=False, repr=False)
    _notes: list[str] = field(default_factory=list, init=False, repr=False)

    async def events(self) -> AsyncIterator[Event]:
        """The run's events, with notices on the branch and the push; ends with `RunFinished`."""
        o = self.options
        self._branched = None
        self._notes = ci_confinement_notes(o)  # said after `start`, with the branch (preflight)
        options = replace(
            o,
            settings=o.settings.model_copy(update={"isolation": False}),
            card_store=_UncommittedRecord(o.card_store),
            commit_card_state=False,  # the card goes into the one folded commit instead
            preflight=self._branch_off,
            review=self.continues.reason if self.continues else None,
        )
        view = RunState(o.card_path, "", "")
        result: RunFinished | None = None
        async for event in run_card(options):
            view.apply(event)
            if isinstance(event, RunFinished):
                result = event
            else:
                yield event
        assert result is not None  # run_card always ends with one
        branched = self._branched
        if branched is None:  # refused (or cancelled) before the branch: nothing changed
            self.outcome = CiOutcome(branch="", why_not_pushed=result.detail)
            yield result
            return
        self.outcome = CiOutcome(branch=branched.branch)
        for note in await self._land(BranchRepo(o.root), branched, result, view):
            yield Notice(message=note)
        if self.outcome.pushed:  # the run's own commit was folded into this one
            result = result.model_copy(update={"commit": self.outcome.commit})
        yield result

    async def _branch_off(self) -> list[str]:
        """The session's preflight: refuse (RunRefused), or make the card's branch; what it says
        follows the run's `start`, the confinement notes first."""
        return [*self._notes, *await self._switch()]

    async def _switch(self) -> list[str]:
        """Refuse (RunRefused), or make the card's branch and say so."""
        repo = BranchRepo(self.options.root)
        try:
            card = await asyncio.to_thread(load_card, self.options.card_path)
            branch = f"cards/{card_slug(card.path, self.options.root)}"
            start = await self._check(repo, branch)
            if self.continues is not None:
                return await self._continue(repo, card, branch, start, self.continues)
            await repo.switch_new(branch)
        except (CardError, GitError) as exc:
            raise RunRefused(str(exc)) from exc
        self._branched = _Branched(card, branch, start, start.commit)
        return [f"working on the new branch {branch} from {start.commit[:10]}"]

    async def _continue(
        self, repo: BranchRepo, card: Card, branch: str, start: StartPoint, review: PullReview
    ) -> list[str]:
        """Check out the card's branch at the reviewed commit, to add one commit on top."""
        where = f"{review.repo}#{review.number}"
        if review.branch != branch:
            raise RunRefused(f"{where} is the branch {review.branch!r}, not this card's {branch}")
        head = await repo.fetch_branch(self.target.remote, branch)
        if head != review.head:
            raise RunRefused(
                f"{self.target.remote}'s {branch} is at {head[:10]}, but the review is of "
                f"{review.head[:10]}: the branch moved since; review its newest commit"
            )
        await repo.switch_new(branch, head)
        self._branched = _Branched(card, branch, start, head)  # switched: go back at the end
        card = await asyncio.to_thread(load_card, card.path)  # the card as its branch has it
        self._branched = _Branched(card, branch, start, head)
        return [f"continuing {branch} from {head[:10]} with {review.remarks} remark(s) of {where}"]

    async def _check(self, repo: BranchRepo, branch: str) -> StartPoint:
        """Where the branch starts; RunRefused if a CI run's one commit cannot be made here."""
        if not await repo.is_repo():
            raise RunRefused(f"{self.options.root} is not a git repository")
        start = await repo.start_point()
        if not await repo.index_matches_head():
            raise RunRefused("something is staged; a CI run's commit must hold only the run's work")
        card = card_key(self.options.card_path, self.options.root)
        if await repo.dirty_files([card]):  # it would be pushed, then gone from this checkout
            raise RunRefused(
                f"{card} has changes that are not committed; a CI run commits the card's new "
                "state, which would take them along: commit or stash them first"
            )
        if await repo.has_branch(branch):
            raise RunRefused(f"the branch {branch} exists already here; delete it or run elsewhere")
        if self.continues is None and await repo.remote_has_branch(self.target.remote, branch):
            raise RunRefused(
                f"{self.target.remote} has a branch {branch} already (an open pull request?); "
                "merge or delete it before running the card again"
            )
        return start

    async def _land(
        self, repo: BranchRepo, branched: _Branched, result: RunFinished, view: RunState
    ) -> list[str]:
        """Fold, push and go back; the notes say what happened to the branch."""
        outcome = self.outcome
        assert outcome is not None
        card = branched.card
        notes: list[str] = []
        commits = await repo.commits_since(branched.base)
        if result.status != "done":
            outcome.why_not_pushed = f"the card ended Failed ({result.reason}): {result.detail}"
        else:
            try:
                outcome.commit = await self._fold(repo, card, branched.base, commits, view)
                await repo.push(self.target.remote, outcome.branch)
                outcome.pushed = True
                short = (outcome.commit or "")[:10]
                notes.append(f"pushed {outcome.branch} ({short}) to {self.target.remote}")
            except GitError as exc:
                outcome.why_not_pushed = f"the card is Done but its branch was not pushed: {exc}"
        stayed = await self._go_back(repo, branched, outcome.pushed)
        notes += stayed
        if not outcome.pushed:
            if commits or outcome.commit or stayed:
                notes.append(f"the branch {outcome.branch} keeps the run's commit here")
            else:
                await repo.delete_branch(outcome.branch)
            notes.append(f"nothing was pushed: {outcome.why_not_pushed}")
        outcome.body = pr_body(self._report(card, view, result))
        if self._notes:
            outcome.body += "\n### Notes\n\n" + "".join(f"- {n}\n" for n in self._notes)
        if self.target.pr_body is not None:
            await asyncio.to_thread(self.target.pr_body.write_text, outcome.body, "utf-8")
            notes.append(f"pull-request body written to {self.target.pr_body}")
        return notes

    async def _go_back(self, repo: BranchRepo, branched: _Branched, pushed: bool) -> list[str]:
        """Back to where the checkout was. A continued card that was not pushed has its branch's
        state put back first: its Failed state differs from the start's card, so git would not
        switch with it (the reason is in the notes and the body; the branch keeps its commit)."""
        if self.continues is None:
            await repo.switch_back(branched.start)
            return []
        if not pushed:
            head = await repo.head() or branched.base
            await repo.restore(head, [self._card_file(branched.card)])
        try:
            await repo.switch_back(branched.start)
        except GitError as exc:
            return [f"the checkout stays on {branched.branch}: {exc}"]
        return []

    def _card_file(self, card: Card) -> str:
        return card.path.resolve().relative_to(self.options.root.resolve()).as_posix()

    async def _fold(
        self, repo: BranchRepo, card: Card, base: str, commits: list[str], view: RunState
    ) -> str:
        if commits:
            message = await repo.message(commits[0])
        else:
            message = (
                f"card: {card.title}\n\nThe run changed no files.\n\n"
                f"Card: {card_slug(card.path, self.options.root)}\nRun: {view.run_id}\n"
            )
        try:  # the record the run wrote, as trailers: the card's history is in git
            written = await asyncio.to_thread(load_card, card.path)
        except CardError:
            written = card
        if written.last_run is not None:
            message = with_record(message, written.last_run)
        card_file = self._card_file(card)
        return await repo.fold_into_one(base, with_ledger(message, view), [card_file])

    def _report(self, card: Card, view: RunState, result: RunFinished) -> RunReport:
        outcome = self.outcome
        assert outcome is not None
        root = self.options.root
        log = StatePaths(root).log(view.run_id)
        return RunReport(
            card=card,
            card_path=card.path.resolve().relative_to(root.resolve()).as_posix(),
            view=view,
            branch=outcome.branch,
            model=view.model,
            log_path=log.resolve().relative_to(root.resolve()).as_posix(),
            pushed_to=self.target.remote if outcome.pushed else None,
            why_not_pushed=outcome.why_not_pushed,
        )
