"""A pull request's review, as the rejection a CI run continues from (`run --ci --from-review`).

On CI the human review of a card happens on its pull request. When the reviewers want changes,
the card continues on its own branch: the review becomes what a rejection in the editor is —
one reason, with the remarks made on lines as `file:line (`code`): text` — in the very format
of `git.hunks.comments_reason`, so the model reads it as it reads any rejection. It is given
with the card as the run's first message (`run/prepare.py`'s `review_prompt`).

Only the review of the branch's newest commit counts: the reviews submitted on the pull
request's head and the line comments made on it (`original_commit_id`), each of this pull
request only. Older remarks were answered by the commit after them; repeating them would send
the model after work already done. A pull request whose head is not the card's branch, or
comes from another repository (a fork), is refused: its comments are not about this card.

What reviewers wrote is data, never a command: each remark is quoted as a JSON string, under
its author's login, and nothing in it reaches cardrunner's own choices (flags, settings, tools,
limits). It only tells the model what the reviewers asked for.

And only reviewers who may change the branch anyway are heard: on a public repository anyone can
review a pull request or comment on its lines, and a drive-by user's remark would steer the
model exactly like the owner's. A remark counts when GitHub's `author_association` says its
author is the repository's OWNER, a MEMBER of its organisation or a COLLABORATOR, and the
permission API (`/collaborators/{login}/permission`, asked once per author) says they can write.
The association alone is not enough (an organisation member or a read-only collaborator may
not write to this repository); the permission API alone would cost a request for every
stranger. An author whose permission cannot be read is left out: fail closed. Remarks left out
are counted and named (author and why) in the run's output, and the model is told how many,
never their text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from cardrunner.board.github import GitHub, GitHubError
from cardrunner.git.hunks import Comment, comments_reason

_URL = re.compile(r"https?://[^/\s]+/([^/\s]+/[^/\s]+)/pull/(\d+)/?")
_SHORT = re.compile(r"([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)#(\d+)")
_SKIPPED_STATES = frozenset({"PENDING", "DISMISSED"})
TRUSTED_ASSOCIATIONS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})
"""`author_association` values that may be heard; NONE, CONTRIBUTOR, FIRST_TIMER,
FIRST_TIME_CONTRIBUTOR, MANNEQUIN (and anything unknown) are left out."""
WRITE_PERMISSIONS = frozenset({"admin", "maintain", "write"})


@dataclass(frozen=True)
class PullReview:
    """The review a CI run continues from: which pull request, its head, and the reason."""

    repo: str
    number: int
    branch: str
    """The pull request's head branch: the card's branch (`cards/<slug>`)."""
    head: str
    """The head commit the review is of; the run continues from exactly this commit."""
    reason: str
    """The reviewers' remarks as one rejection reason (`comments_reason`)."""
    remarks: int
    left_out: str = ""
    """One line per remark left out: whose, and why (never its text). A string, like every
    field but the numbers, so a saved review (`fetch-review`'s JSON) keeps its plain shape."""


def pull_request_ref(text: str, default_repo: str | None) -> tuple[str, int] | None:
    """`N` (in `default_repo`, `GITHUB_REPOSITORY` on Actions), `OWNER/REPO#N` or the pull
    request's URL, as (repo, number); None when it is none of those."""
    if text.isdigit() and default_repo and _SHORT.fullmatch(f"{default_repo}#{text}"):
        return default_repo, int(text)
    found = _SHORT.fullmatch(text) or _URL.fullmatch(text)
    return (found.group(1), int(found.group(2))) if found else None


def fetch_review(client: GitHub, repo: str, number: int) -> PullReview:
    """The pull request's review of its head; GitHubError when GitHub fails or it is not one
    to continue from (closed, from a fork, no remark on its head)."""
    base = f"/repos/{repo}/pulls/{number}"
    pull = client.get(base)
    if not isinstance(pull, dict) or pull.get("state") != "open":
        raise GitHubError(f"{repo}#{number} is not an open pull request")
    head = pull.get("head") or {}
    own = ((pull.get("base") or {}).get("repo") or {}).get("full_name")
    if (head.get("repo") or {}).get("full_name") != own:
        raise GitHubError(
            f"{repo}#{number} comes from another repository; only a card's own branch continues"
        )
    sha = str(head.get("sha", ""))
    params = {"per_page": "100"}
    reviews = [r for r in client.get_all(f"{base}/reviews", params) if _is_review_of(r, sha)]
    lines = [c for c in client.get_all(f"{base}/comments", params) if _is_remark_of(c, sha, number)]
    heard = _Writers(client, repo)
    left_out = [f"{_login(i)} ({why})" for i in reviews + lines if (why := heard.refusal(i))]
    reviews = [r for r in reviews if not heard.refusal(r)]
    lines = [c for c in lines if not heard.refusal(c)]
    remarks = [_review_remark(r) for r in reviews] + sorted(
        (_line_remark(c) for c in lines), key=lambda c: (c.path or "", c.line or 0)
    )
    if not remarks:
        unheard = f" ({len(left_out)} left out: {', '.join(left_out)})" if left_out else ""
        raise GitHubError(
            f"{repo}#{number} has no review of its head {sha[:10]} by anyone with write access"
            f"{unheard}: nothing to continue from"
        )
    reason = comments_reason(remarks)
    if left_out:
        reason += (
            f"\n({len(left_out)} more remark(s) by users without write access to {repo} were "
            "left out unread; do not look for them.)"
        )
    return PullReview(
        repo, number, str(head.get("ref", "")), sha, reason, len(remarks), "\n".join(left_out)
    )


class _Writers:
    """Who may be heard: a trusted `author_association` and write permission, each login's
    permission asked once (the answer, or the failure, is remembered)."""

    def __init__(self, client: GitHub, repo: str) -> None:
        self.client, self.repo = client, repo
        self.permissions: dict[str, str] = {}

    def refusal(self, item: dict[str, Any]) -> str:
        """Why `item`'s author is not heard; "" when they are."""
        association = str(item.get("author_association") or "NONE").upper()
        if association not in TRUSTED_ASSOCIATIONS:
            return f"author_association {association}"
        login = str((item.get("user") or {}).get("login") or "")
        if not login:
            return "no author"
        if login not in self.permissions:
            self.permissions[login] = self._permission(login)
        permission = self.permissions[login]
        return "" if permission in WRITE_PERMISSIONS else f"permission {permission}"

    def _permission(self, login: str) -> str:
        try:
            answer = self.client.get(
                f"/repos/{self.repo}/collaborators/{quote(login, safe='')}/permission"
            )
        except GitHubError:
            return "unknown (GitHub did not say)"
        if not isinstance(answer, dict):
            return "unknown"
        role = str(answer.get("role_name") or "")  # names `maintain`, which `permission` does not
        return role if role in WRITE_PERMISSIONS else str(answer.get("permission") or "none")


def _login(item: dict[str, Any]) -> str:
    return "@" + str((item.get("user") or {}).get("login") or "someone")


def _is_review_of(review: Any, sha: str) -> bool:
    return (
        isinstance(review, dict)
        and review.get("commit_id") == sha
        and review.get("state") not in _SKIPPED_STATES
        and bool(str(review.get("body") or "").strip())
    )


def _is_remark_of(comment: Any, sha: str, number: int) -> bool:
    """A line comment of this pull request, made on its head commit, with some text."""
    if not isinstance(comment, dict) or comment.get("original_commit_id") != sha:
        return False
    url = str(comment.get("pull_request_url") or "")
    return url.endswith(f"/pulls/{number}") and bool(str(comment.get("body") or "").strip())


def _quoted(item: dict[str, Any], what: str = "") -> str:
    login = str((item.get("user") or {}).get("login") or "someone")
    said = json.dumps(str(item.get("body") or "").strip(), ensure_ascii=False)
    return f"@{login}{what} wrote {said}"


def _review_remark(review: dict[str, Any]) -> Comment:
    state = str(review.get("state") or "").lower().replace("_", " ")
    return Comment(_quoted(review, f" ({state})" if state else ""))


def _line_remark(comment: dict[str, Any]) -> Comment:
    """A comment on a line: its file, its line (the old file's for a removed one, as GitHub's
    `side: LEFT`) and the diff line it is about — the last line of its `diff_hunk`."""
    line = comment.get("line") or comment.get("original_line")
    hunk = str(comment.get("diff_hunk") or "").rstrip("\n").split("\n")[-1]
    code = hunk if hunk and not hunk.startswith("@@") else ""
    return Comment(
        _quoted(comment), str(comment.get("path") or "") or None, int(line) if line else None, code
    )
