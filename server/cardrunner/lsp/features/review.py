"""The review in the editor: the `Approver` a run awaits before `git_commit`, and its `.diff`.

When a run asks, the server writes the run's diff to `.cardrunner/runs/<id>.diff` and a copy of
every changed file as it was at run start under `.cardrunner/runs/<id>/before/`, tells the
client (`cardrunner/reviewRequested`, for native diff editors), opens the `.diff` document,
asks with `window/showMessageRequest`, and offers Accept/Reject lenses, code actions and
commands. Whichever answers first decides; a client that answers `null`, an error or never
only stops asking — the lenses and commands still decide. A client that said at `initialize`
it shows reviews itself (`nativeReview`, core/client.py) gets the notification alone: no
`.diff` document is opened for it and no question asked — it decides through the commands.

The `.diff` document is a place to review in, with per-hunk keep/drop and line comments: every
LSP editor can open a text file, so it is where editors without cardrunner's own client review.
On it the server offers, as code lenses and code actions: above each hunk "Drop hunk" (or "Keep
hunk" once dropped), and at the top "Accept & commit" (naming what is dropped) and "Reject"
(naming the comments that will be its reason). A dropped hunk is marked with a Hint tagged
Unnecessary, so editors grey it out. Lines the reviewer types starting with `#` are comments;
Reject without a reason sends them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path

from cardrunner.agent.review import HunkRef, Proof, ReviewDecision, ReviewRequest
from cardrunner.config.paths import StatePaths
from cardrunner.git.hunks import Hunk, ParsedDiff, comments_reason, parse_diff, quote
from cardrunner.git.repo import GitRepo
from cardrunner.lsp.core import protocolnames as names
from cardrunner.lsp.core.client import Client
from cardrunner.lsp.core.diagnostics import REVIEW, DiagnosticsStore
from cardrunner.record.state import RunState

log = logging.getLogger("cardrunner.lsp.review")

ACCEPT, REJECT, SHOW_DIFF = "Accept & commit", "Reject", "Show diff"
DEFAULT_REJECT_REASON = "rejected in the editor"


@dataclass
class PendingReview:
    """One review waiting for its answer; `decided` is resolved once, by whoever is first."""

    card_path: Path
    request: ReviewRequest
    diff_path: Path
    files: list[dict[str, str | None]]
    decided: asyncio.Future[ReviewDecision] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    criteria: list[dict[str, object]] = field(default_factory=list)
    """Each criterion as the run left it: text, status, evidence, `checked` and `screenshots`."""
    dropped: set[HunkRef] = field(default_factory=set)
    """Hunks the reviewer marked to drop so far (lenses, code actions, `toggleHunk`)."""


class ReviewHub:
    """The reviews waiting in this server, by card; makes one `EditorApprover` per run."""

    def __init__(
        self,
        client: Client,
        root: Callable[[], Path],
        uri: Callable[[Path], str],
        store: DiagnosticsStore,
        refresh_card: Callable[[Path], None],
        open_text: Callable[[Path], str | None] = lambda path: None,
    ) -> None:
        """`refresh_card` recomputes a card's diagnostics (`CardDiagnostics.refresh`): a
        review opening, closing or marking a hunk changes what its card shows."""
        self._client = client
        self._uri = uri
        self._store = store
        self._refresh_card = refresh_card
        self._open_text = open_text
        self._root = root
        self._pending: dict[Path, PendingReview] = {}
        self._diffs: dict[Path, Path] = {}

    def _changed(self, card_path: Path) -> None:
        """The card's review opened, closed or changed: its diagnostics, the review's marks and
        the lenses follow."""
        self._refresh_card(card_path)
        self.marks(card_path)
        self._client.refresh_code_lenses()

    def marks(self, card_path: Path) -> None:
        """Grey out the dropped hunks of the card's review diff; clear them when it is decided."""
        diff = self.last_diff(card_path)
        if diff is None:
            return
        uri = self._uri(diff)
        pending = self.pending(card_path)
        if pending is None:
            self._store.set(REVIEW, uri, [])
            return
        self._store.set(REVIEW, uri, dropped_diagnostics(self.parsed(pending), pending.dropped))

    def approver(self, view: RunState) -> EditorApprover:
        return EditorApprover(self, view)

    def pending(self, card_path: Path) -> PendingReview | None:
        return self._pending.get(card_path)

    def last_diff(self, card_path: Path) -> Path | None:
        """The diff of the card's pending or most recent review in this session."""
        pending = self._pending.get(card_path)
        return pending.diff_path if pending else self._diffs.get(card_path)

    def for_diff(self, diff_path: Path) -> PendingReview | None:
        """The waiting review whose `.diff` document this is."""
        return next((p for p in self._pending.values() if p.diff_path == diff_path), None)

    def parsed(self, pending: PendingReview) -> ParsedDiff:
        """The diff document as the reviewer sees it now (with the comments typed into it).

        A buffer whose hunks are not this review's (an unsaved copy of an earlier review, or
        a diff line edited by mistake) would point commands at the wrong lines: then the
        review's own diff is used, without comments."""
        text = self._open_text(pending.diff_path)
        if text is None:
            try:
                text = pending.diff_path.read_text(encoding="utf-8")
            except OSError:
                text = pending.request.diff
        own = parse_diff(pending.request.diff, original=pending.request.diff)
        seen = parse_diff(text, original=pending.request.diff)  # comments: typed lines only
        same = [(h.ref, h.lines) for h in seen.hunks()] == [(h.ref, h.lines) for h in own.hunks()]
        return seen if same else own

    def toggle_hunk(self, card_path: Path, ref: HunkRef, drop: bool | None = None) -> bool | None:
        """Mark a hunk dropped or kept (None: flip); the new state, None when not in the diff."""
        pending = self._pending.get(card_path)
        if pending is None or ref not in {h.ref for h in self.parsed(pending).hunks()}:
            return None
        now = (ref not in pending.dropped) if drop is None else drop
        if now:
            pending.dropped.add(ref)
        else:
            pending.dropped.discard(ref)
        self._changed(card_path)
        return now

    def accept(
        self, card_path: Path, reason: str = "", drop: list[str] | None = None,
        hunks: list[HunkRef] | None = None,
    ) -> bool:  # fmt: skip
        """Accept, dropping the files in `drop` and the hunks marked so far plus `hunks`."""
        pending = self._pending.get(card_path)
        marked = pending.dropped if pending else set()
        chosen = sorted(marked | set(hunks or []), key=lambda r: (r.path, r.index))
        seen = bool(pending and pending.request.warnings)  # the question showed them
        decision = ReviewDecision("accept", reason, drop or [], chosen, acknowledged=seen)
        return self.decide(card_path, decision)

    def comment_reason(self, card_path: Path) -> str | None:
        """The comments typed into the card's review diff as one reason, None without any."""
        pending = self._pending.get(card_path)
        comments = self.parsed(pending).comments if pending else []
        return comments_reason(comments) if comments else None

    def reject(self, card_path: Path, reason: str | None = None) -> bool:
        """Reject with `reason` and the diff's comments (either may be missing; the default
        reason when both are): a typed reason never drops the remarks made on lines."""
        parts = [(reason or "").strip(), self.comment_reason(card_path) or ""]
        why = "\n".join(p for p in parts if p) or DEFAULT_REJECT_REASON
        return self.decide(card_path, ReviewDecision("reject", why))

    def decide(self, card_path: Path, decision: ReviewDecision) -> bool:
        """Answer the card's pending review; False when none is waiting (or it was answered)."""
        pending = self._pending.get(card_path)
        if pending is None or pending.decided.done():
            return False
        pending.decided.set_result(decision)
        return True

    async def show_diff(self, card_path: Path, *, say_where: bool = True) -> Path | None:
        """Open the card's diff; a client that cannot (no `window/showDocument`, or it said
        no) is told where the file is instead (`say_where`), so "Show diff" is never a no-op."""
        diff = self.last_diff(card_path)
        if diff is None:
            return None
        shown = await self._client.show_document(from_fs_path(str(diff)) or diff.as_uri())
        if not shown and say_where:
            self._client.show_message(f"cardrunner: the diff to review is {diff}")
        return diff

    async def review(
        self,
        card_path: Path,
        request: ReviewRequest,
        criteria: list[dict[str, object]] | None = None,
    ) -> ReviewDecision:
        diff_path, files = await write_review_files(request, self._root())
        pending = PendingReview(card_path, request, diff_path, files, criteria=criteria or [])
        self._pending[card_path] = pending
        self._diffs[card_path] = diff_path
        asker = asyncio.create_task(self._ask(pending))
        try:
            self._client.notify(names.REVIEW_REQUESTED, self._payload(pending))
            self._changed(card_path)
            return await pending.decided
        finally:
            asker.cancel()
            with contextlib.suppress(BaseException):
                await asker
            self._pending.pop(card_path, None)
            self._changed(card_path)

    def _payload(self, pending: PendingReview) -> dict[str, object]:
        r = pending.request
        return {
            "uri": self._uri(pending.card_path),
            "runId": r.run_id,
            "title": r.card_title,
            "message": r.message,
            "diffPath": str(pending.diff_path),
            "files": pending.files,
            "criteria": pending.criteria,
        }

    async def _ask(self, pending: PendingReview) -> None:
        """Open the diff, then ask until someone decides; a client that cannot answer stops it.
        A client with its own review UI gets neither."""
        if self._client.native_review:
            return
        await self.show_diff(pending.card_path, say_where=False)  # the question says where
        params = types.ShowMessageRequestParams(
            type=types.MessageType.Info,
            message=question(pending.request, pending.diff_path),
            actions=[types.MessageActionItem(t) for t in ACTIONS],
        )
        while not pending.decided.done():
            try:
                answer = await self._client.request(
                    types.WINDOW_SHOW_MESSAGE_REQUEST, params, seconds=None
                )
            except Exception as exc:
                log.info("the review question was not answered (%r); use the lenses", exc)
                return
            title = getattr(answer, "title", None)
            if title == ACCEPT:
                self.accept(pending.card_path)
            elif title == REJECT:
                self.reject(pending.card_path)
            elif title == SHOW_DIFF:
                await self.show_diff(pending.card_path)
            else:
                return  # dismissed: the lenses, code actions and commands still decide


ACTIONS = (SHOW_DIFF, REJECT, ACCEPT)
"""The question's answers. The first is what a plain Enter picks in some clients (Eglot), so
it is the harmless one; Accept, the one that cannot be taken back, comes last."""


def question(request: ReviewRequest, diff_path: Path) -> str:
    """The review question: what changed, where the diff is, and how else to answer — a client
    without `window/showDocument` shows only this text."""
    files = ", ".join(map(quote, request.files[:8])) + (" …" if len(request.files) > 8 else "")
    subject = request.message.strip().splitlines()[0] if request.message.strip() else ""
    warnings = "".join(f"⚠ {w} — accepting accepts this\n" for w in request.warnings)
    checks = f"runner's checks: {request.checks}\n" if request.checks else ""
    return (
        f"cardrunner: review '{request.card_title}' — {len(request.files)} file(s): {files}\n"
        f"{warnings}{checks}{subject}\n"
        f"diff: {diff_path}\n"
        "(or answer later: cardrunner.acceptChanges, or cardrunner.rejectChanges with a reason)"
    )


class EditorApprover:
    """The `Approver` of one run in the editor."""

    def __init__(self, hub: ReviewHub, view: RunState) -> None:
        self._hub = hub
        self._view = view

    async def review(self, request: ReviewRequest) -> ReviewDecision:
        root, none = self._hub._root(), Proof()  # the run's files are relative to the root
        criteria: list[dict[str, object]] = [
            {"text": c.text, "status": c.status, "evidence": c.evidence,
             "checked": (p := request.proof.get(i, none)).checked,
             "screenshots": [str(root / shot) for shot in p.screenshots]}
            for i, c in enumerate(self._view.criteria)
        ]  # fmt: skip
        return await self._hub.review(self._view.card_path, request, criteria)


async def write_review_files(
    request: ReviewRequest, workspace: Path
) -> tuple[Path, list[dict[str, str | None]]]:
    """Write `<id>.diff` and the before-copies under the workspace's `.cardrunner/runs/`;
    return the diff path and the `files` entries (`after` is where the run works: the
    workspace, or its own worktree)."""
    root = request.root
    folder = StatePaths(workspace).ensure().runs
    diff_path = folder / f"{request.run_id}.diff"
    before_dir = folder / request.run_id / "before"
    repo = GitRepo(root)  # each file as it was in the write area at run start (None: new)
    befores = {f: await repo.show_file(request.base_tree, f) for f in request.files}

    def write() -> list[dict[str, str | None]]:
        folder.mkdir(parents=True, exist_ok=True)
        diff_path.write_text(request.diff, encoding="utf-8")
        entries: list[dict[str, str | None]] = []
        for rel, content in befores.items():
            copy: str | None = None
            if content is not None:
                target = before_dir / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content)
                copy = str(target)
            entries.append({"path": rel, "before": copy, "after": str(root / rel)})
        return entries

    return diff_path, await asyncio.to_thread(write)


SOURCE = "cardrunner"


def hunk_argument(ref: HunkRef) -> dict[str, object]:
    return {"path": ref.path, "hunk": ref.index}


def _hunk_command(card_uri: str, hunk: Hunk, dropped: set[HunkRef]) -> types.Command:
    drop = hunk.ref not in dropped
    verb = "✗ Drop hunk" if drop else "↺ Keep hunk"
    return types.Command(
        title=f"{verb} {hunk.index + 1} of {quote(hunk.path)} (+{hunk.added}/-{hunk.removed})",
        command=names.TOGGLE_HUNK,
        arguments=[card_uri, {**hunk_argument(hunk.ref), "drop": drop}],
    )


def _decide_commands(
    card_uri: str, parsed: ParsedDiff, dropped: set[HunkRef]
) -> list[types.Command]:
    kept = sum(1 for h in parsed.hunks() if h.ref not in dropped)
    total = len(parsed.hunks())
    accept = "✓ Accept & commit" + (f" ({kept} of {total} hunks)" if dropped else "")
    comments = len(parsed.comments)
    reject = "✗ Reject" + (f" with {comments} comment(s)" if comments else "")
    return [
        types.Command(title=accept, command=names.ACCEPT, arguments=[card_uri]),
        types.Command(title=reject, command=names.REJECT, arguments=[card_uri]),
    ]


def diff_lenses(card_uri: str, parsed: ParsedDiff, dropped: set[HunkRef]) -> list[types.CodeLens]:
    """Accept / Reject on the first line, Drop / Keep above every hunk."""
    top = types.Range(types.Position(0, 0), types.Position(0, 0))
    lenses = [
        types.CodeLens(range=top, command=c) for c in _decide_commands(card_uri, parsed, dropped)
    ]
    for hunk in parsed.hunks():
        at = types.Range(types.Position(hunk.first_line, 0), types.Position(hunk.first_line, 0))
        lenses.append(types.CodeLens(range=at, command=_hunk_command(card_uri, hunk, dropped)))
    return lenses


def diff_actions(
    card_uri: str, parsed: ParsedDiff, dropped: set[HunkRef], lines: range
) -> list[types.CodeAction]:
    """The hunks touched by the selection, then Accept / Reject (kindless: the quick-fix menu)."""
    hunks = [
        h for h in parsed.hunks() if h.first_line <= lines.stop - 1 and h.last_line >= lines.start
    ]
    commands = [_hunk_command(card_uri, h, dropped) for h in hunks]
    commands += _decide_commands(card_uri, parsed, dropped)
    return [types.CodeAction(title=c.title, command=c) for c in commands]


def dropped_diagnostics(parsed: ParsedDiff, dropped: set[HunkRef]) -> list[types.Diagnostic]:
    """A faded Hint over each dropped hunk: visible in the document, never in a problem list."""
    return [
        types.Diagnostic(
            range=types.Range(
                types.Position(h.first_line, 0), types.Position(h.last_line, len(h.lines[-1]))
            ),
            message=f"dropped: hunk {h.index + 1} of {h.path} is undone when you accept",
            severity=types.DiagnosticSeverity.Hint,
            tags=[types.DiagnosticTag.Unnecessary],
            source=SOURCE,
            code="dropped-hunk",
        )
        for h in parsed.hunks()
        if h.ref in dropped
    ]
