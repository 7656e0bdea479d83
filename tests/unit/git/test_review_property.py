"""The hunk review, byte for byte: whatever files, line endings and names, whatever hunks are
dropped and whatever the reviewer edits while the review is open, the commit holds exactly the
chosen bytes (real git repositories, the real commit tool).

Each generated file is separators of nine unique lines with a changed block between each two,
so every block is one hunk of its own (git joins changes at most six lines apart) and the
expected bytes of any choice can be written down block by block without asking git. A hand edit
changes a separator's middle line (four lines from any change, out of every hunk's context) or
the whole of a kept block; a drop takes the block back to its start. Line endings are LF or
CRLF, lines hold form feeds, vertical tabs, lone CRs, U+2028 and `#`, the last line may lack its
newline (and a change may add or remove it: a hunk of its own), names are ones git quotes.
"""

from __future__ import annotations

import asyncio
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cardrunner.agent.review import HunkRef, ReviewDecision, ReviewRequest
from cardrunner.agent.toolpool import ToolContext
from cardrunner.git.hunks import parse_diff
from cardrunner.git.repo import GitRepo
from cardrunner.tools.commit import CommitTool
from cardrunner.verify.calls import OutsideWatch
from tests.support.commitparts import bare_parts
from tests.support.project import init_repo

NAMES = ['notes "v2".py', "plain.py", "sp ace.txt", "back\\slash.py", "ünï.py", "tab\tin.txt"]
SEP = 9
TEXT = st.text(
    st.sampled_from(["a", "b", " ", "#", "\f", "\v", "\r", "\u2028", "é", "\x1c", "\t"]),
    max_size=6,
)
BLOCK = st.lists(TEXT.map(lambda t: "x" + t), max_size=3)


@dataclass
class FileCase:
    name: str
    eol: str
    base: list[list[str]]
    model: list[list[str]]
    base_nl: bool
    model_nl: bool
    executable: bool
    drops: list[bool]
    """Per hunk (each block, then the final newline's if it changed): dropped in the review."""
    hand: list[int]
    """Separators whose middle line the reviewer rewrites."""
    hand_block: int | None
    """A kept block the reviewer rewrites."""

    @property
    def nl_hunk(self) -> bool:
        return self.base_nl != self.model_nl

    def seps(self, hand: bool) -> list[list[str]]:
        out = [[f"s{i}.{j}" for j in range(SEP)] for i in range(len(self.base) + 1)]
        for i in self.hand if hand else []:
            out[i][SEP // 2] = f"hand {i}\f"
        return out

    def render(self, blocks: list[list[str]], seps: list[list[str]], newline: bool) -> bytes:
        lines = [line for i, block in enumerate(blocks) for line in [*seps[i], *block]] + seps[-1]
        text = "".join(line + self.eol for line in lines)
        return (text if newline else text[: -len(self.eol)]).encode()

    def expected(self) -> bytes:
        blocks = [
            b if self.drops[i] else (["x hand"] if i == self.hand_block else m)
            for i, (b, m) in enumerate(zip(self.base, self.model, strict=True))
        ]
        newline = self.base_nl if self.nl_hunk and self.drops[-1] else self.model_nl
        return self.render(blocks, self.seps(True), newline)

    def edited(self) -> bytes:
        blocks = [["x hand"] if i == self.hand_block else m for i, m in enumerate(self.model)]
        return self.render(blocks, self.seps(True), self.model_nl)


@st.composite
def file_cases(draw: st.DrawFn, name: str) -> FileCase:
    count = draw(st.integers(1, 3))
    base = [draw(BLOCK) for _ in range(count)]
    model = [draw(BLOCK.filter(lambda m, b=b: m != b)) for b in base]  # type: ignore[misc]
    base_nl, model_nl = draw(st.booleans()), draw(st.booleans())
    hunks = count + (base_nl != model_nl)
    drops = draw(st.lists(st.booleans(), min_size=hunks, max_size=hunks))
    kept = [i for i in range(count) if not drops[i]]
    return FileCase(
        name=name,
        eol=draw(st.sampled_from(["\n", "\r\n"])),
        base=base,
        model=model,
        base_nl=base_nl,
        model_nl=model_nl,
        executable=draw(st.booleans()),
        drops=drops,
        hand=draw(st.lists(st.integers(0, count), unique=True, max_size=2)),
        hand_block=draw(st.sampled_from(kept)) if kept and draw(st.booleans()) else None,
    )


@dataclass
class Reviewer:
    """Checks the hunks it was shown, edits by hand while the review is open, then accepts."""

    root: Path
    cases: list[FileCase]
    helper: bool

    async def review(self, request: ReviewRequest) -> ReviewDecision:
        parsed = parse_diff(request.diff)
        drops: list[HunkRef] = []
        for case in self.cases:
            patch = parsed.file(f"src/{case.name}")
            assert patch is not None, (case.name, request.diff)
            assert len(patch.hunks) == len(case.drops), request.diff
            drops += [h.ref for h, drop in zip(patch.hunks, case.drops, strict=True) if drop]
            (self.root / "src" / case.name).write_bytes(case.edited())
        if self.helper:
            (self.root / "src" / "helper.py").write_bytes(b"HELP = 1\r\n")
        return ReviewDecision("accept", "keep it small", drop_hunks=drops)


def show(root: Path, spec: str) -> bytes:
    return subprocess.run(["git", "show", spec], cwd=root, capture_output=True, check=True).stdout


def mode(root: Path, name: str) -> str:
    out = subprocess.run(
        ["git", "ls-tree", "-z", "HEAD", "--", f"src/{name}"], cwd=root, capture_output=True
    )
    return out.stdout.split(b" ", 1)[0].decode()


async def review_once(root: Path, cases: list[FileCase], helper: bool) -> str:
    repo = GitRepo(root)
    base = await repo.snapshot(["src"])
    for case in cases:
        path = root / "src" / case.name
        path.write_bytes(case.render(case.model, case.seps(False), case.model_nl))
        if case.executable:
            path.chmod(path.stat().st_mode | stat.S_IXUSR)
    tool = CommitTool(
        repo, Reviewer(root, cases, helper), ["src"], base, "run-1", "Card", root / "c.md", "c",
        lambda: {"Card": "c"}, *bare_parts(root), hooks=None,
        outside=OutsideWatch(repo, ["src"], ()),
    )  # fmt: skip
    result = await tool.tool().fn({"message": "card: Card\n\nChanges."}, ToolContext(1, print))
    return result.text


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    names=st.lists(st.sampled_from(NAMES), min_size=1, max_size=3, unique=True),
    data=st.data(),
    helper=st.booleans(),
)
def test_the_commit_holds_exactly_the_reviewed_choice(
    names: list[str], data: st.DataObject, helper: bool
) -> None:
    cases = [data.draw(file_cases(name)) for name in names]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "src").mkdir()
        for case in cases:
            (root / "src" / case.name).write_bytes(
                case.render(case.base, case.seps(False), case.base_nl)
            )
        init_repo(root)
        text = asyncio.run(review_once(root, cases, helper))
        changed = helper or any(
            c.expected() != c.render(c.base, c.seps(False), c.base_nl) for c in cases
        )
        if not changed:
            assert "nothing was committed" in text, text
            return
        assert text.startswith("Accepted and committed"), text
        for case in cases:
            committed = show(root, f"HEAD:src/{case.name}")
            assert committed == case.expected(), (case, text)
            assert (root / "src" / case.name).read_bytes() == committed
            every = all(case.drops)
            assert mode(root, case.name) == (
                "100755" if case.executable and not every else "100644"
            )
        if any(any(c.drops) for c in cases):
            assert "The reviewer dropped these changes" in text, text
        if helper:
            assert show(root, "HEAD:src/helper.py") == b"HELP = 1\r\n"
