"""The push job of the CI workflows ("safe outputs"), for real: a bundle in, a branch out.

The job that runs the model has no token that can push: `run --ci` pushes the card's branch
into a local bare "outbox" and the job hands `git bundle create` of it over. The push job, a
fresh clone at the base, runs `cardrunner publish` on it, which checks the bundle against the
base's settings and only then pushes to the bare `origin`. Every hostile bundle here is built
as an attacker who controls the model's commits would build it, and each test asserts that
`origin` got no branch at all, and that the refusal names the file.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cardrunner.testing.fake_api import FakeMessagesAPI
from tests.e2e.test_ci_from_review import (
    DOCUMENTED,
    api_env,
    pull_request,
    review_transcript,
)
from tests.support.fakegithub import serving
from tests.support.project import cli, fix_transcript, git, make_project, slug_of

CARD = "cards/fix-add.md"
BRANCH = f"cards/{slug_of(CARD)}"


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """The bare remote, holding the project with its one New card (write area: src)."""
    seed = tmp_path / "seed"
    make_project(seed)
    bare = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(bare))
    return bare


def clone(origin: Path, where: Path) -> Path:
    """A fresh checkout, as each job of the workflow starts with."""
    git(origin.parent, "clone", "-q", str(origin), str(where))
    git(where, "config", "user.email", "ci@example.com")
    git(where, "config", "user.name", "CI")
    return where


@pytest.fixture
def marker(tmp_path: Path) -> Iterator[Path]:
    """A file a reviewer's command would touch: it must never exist."""
    path = tmp_path / "marker"
    yield path
    assert not path.exists()


def branches(origin: Path) -> list[str]:
    return git(origin, "for-each-ref", "--format=%(refname)", "refs/heads/").split()


def bundle_of(job: Path, branch: str, base: str, out: Path) -> Path:
    git(job, "bundle", "create", "-q", str(out), branch, f"^{base}")
    return out


def publish(job: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return cli(job, "publish", *args, timeout=60)


def test_a_run_handed_over_as_a_bundle_is_checked_then_pushed(origin: Path, tmp_path: Path) -> None:
    model_job = clone(origin, tmp_path / "model-job")
    base = git(model_job, "rev-parse", "HEAD").strip()
    outbox = tmp_path / "outbox.git"
    git(tmp_path, "init", "-q", "--bare", str(outbox))
    body = tmp_path / "handover" / "pr-body.md"
    body.parent.mkdir()
    with FakeMessagesAPI(fix_transcript()) as api:
        run = cli(
            model_job, "run", CARD, "--ci", "--remote", str(outbox), "--pr-body", str(body),
            env=api_env(api),
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        api.assert_complete()
    assert branches(origin) == ["refs/heads/main"]  # the model's job pushed nowhere real
    handed = bundle_of(model_job, BRANCH, base, body.parent / "card.bundle")

    push_job = clone(origin, tmp_path / "push-job")
    title = tmp_path / "title.txt"
    check = publish(
        push_job, str(handed), "--base", base, "--check-only", "--title-out", str(title)
    )
    assert check.returncode == 0, check.stderr
    assert f"accepted {BRANCH}: 1 commit(s)" in check.stderr
    assert f"{CARD}, src/calc.py" in check.stderr
    assert title.read_text() == "card: Adding two numbers subtracts them\n"
    assert branches(origin) == ["refs/heads/main"]  # --check-only pushes nothing

    pushed = publish(
        push_job, str(handed), "--base", base, "--branch", BRANCH, "--pr-body", str(body)
    )
    assert pushed.returncode == 0, pushed.stderr
    assert f"pushed {BRANCH}" in pushed.stderr
    assert git(origin, "rev-parse", BRANCH) == git(model_job, "rev-parse", BRANCH)
    assert git(origin, "rev-parse", f"{BRANCH}~1").strip() == base
    # a second hand-over of the same branch is not forced over the first
    again = publish(clone(origin, tmp_path / "again"), str(handed), "--base", base)
    assert again.returncode == 0, again.stderr  # the same tip: nothing changes
    assert git(origin, "rev-parse", BRANCH) == git(model_job, "rev-parse", BRANCH)


Attack = Callable[[Path], None]


def _write(job: Path, path: str, data: bytes | str, message: str = "card: change") -> None:
    file = job / path
    file.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    file.write_bytes(data)
    git(job, "add", "-f", "--", path)
    git(job, "commit", "-qm", message)


def _workflow(job: Path) -> None:
    _write(job, "src/calc.py", "def add(a, b):\n    return a + b\n")
    _write(job, ".github/workflows/release.yml", "on: push\njobs: {}\n")


def _case_folded_workflow(job: Path) -> None:
    _write(job, ".GitHub/Workflows/x.yml", "on: push\n")


def _gitlab(job: Path) -> None:
    _write(job, ".gitlab-ci.yml", "job:\n  script: curl evil\n")


def _outside_area(job: Path) -> None:
    _write(job, "tests/conftest.py", "import os\nos.system('touch /tmp/pwned')\n")


def _own_settings(job: Path) -> None:
    _write(job, "cardrunner.toml", '[paths]\nwrite = ["."]\n')


def _another_card(job: Path) -> None:
    _write(job, "cards/other.md", "---\ntitle: x\nstate: New\n---\nbody\n")


def _too_big(job: Path) -> None:
    _write(job, "src/blob.bin", os.urandom(1_200_000))


def _symlink(job: Path) -> None:
    (job / "src" / "creds").symlink_to("/root/.aws/credentials")
    git(job, "add", "--", "src/creds")
    git(job, "commit", "-qm", "a link")


def _deleted_later(job: Path) -> None:
    _write(job, ".github/workflows/x.yml", "on: push\n")
    git(job, "rm", "-q", "--", ".github/workflows/x.yml")
    git(job, "commit", "-qm", "gone again")


REFUSED: dict[str, tuple[Attack, str]] = {
    "a workflow file": (_workflow, "writes .github/workflows/release.yml: a workflow, CI"),
    "a workflow, case-folded": (_case_folded_workflow, "writes .GitHub/Workflows/x.yml"),
    "another CI's file": (_gitlab, "writes .gitlab-ci.yml: a workflow, CI"),
    "outside the write area": (_outside_area, "writes tests/conftest.py: outside the write area"),
    "cardrunner's settings": (_own_settings, "writes cardrunner.toml: a workflow, CI or settings"),
    "another card": (_another_card, "writes cards/other.md: outside the write area"),
    "a file too big": (_too_big, "src/blob.bin is 1200000 bytes; at most 1000000"),
    "a symlink": (_symlink, "writes src/creds as a symlink"),
    "a workflow added then removed": (_deleted_later, "writes .github/workflows/x.yml"),
}


@pytest.mark.parametrize("attack", REFUSED, ids=list(REFUSED))
def test_the_push_job_refuses_what_no_card_may_push(
    origin: Path, tmp_path: Path, attack: str
) -> None:
    make, why = REFUSED[attack]
    model_job = clone(origin, tmp_path / "model-job")
    base = git(model_job, "rev-parse", "HEAD").strip()
    git(model_job, "switch", "-qc", BRANCH)
    make(model_job)
    handed = bundle_of(model_job, BRANCH, base, tmp_path / "card.bundle")
    refused = publish(clone(origin, tmp_path / "push-job"), str(handed), "--base", base)
    assert refused.returncode == 1, refused.stderr
    assert "cardrunner: refused:" in refused.stderr and why in refused.stderr, refused.stderr
    assert branches(origin) == ["refs/heads/main"]


def _fixed(job: Path) -> None:
    _write(job, "src/calc.py", "def add(a, b):\n    return a + b\n")


def test_another_branch_a_foreign_base_and_too_many_commits_are_refused(
    origin: Path, tmp_path: Path
) -> None:
    model_job = clone(origin, tmp_path / "model-job")
    base = git(model_job, "rev-parse", "HEAD").strip()
    other = f"cards/{slug_of('cards/other.md')}"
    git(model_job, "switch", "-qc", other)
    _fixed(model_job)
    stray = bundle_of(model_job, other, base, tmp_path / "other.bundle")
    push_job = clone(origin, tmp_path / "push-job")
    wrong = publish(push_job, str(stray), "--base", base, "--branch", BRANCH)
    assert wrong.returncode == 1
    assert f"the bundle's branch is {other}, not the card's branch {BRANCH}" in wrong.stderr
    not_a_card = "main"
    git(model_job, "branch", "-f", not_a_card, other)
    onto_main = bundle_of(model_job, "main", base, tmp_path / "main.bundle")
    main = publish(push_job, str(onto_main), "--base", base)
    assert main.returncode == 1 and "'main' is not a card's branch" in main.stderr

    git(model_job, "switch", "-qc", BRANCH, base)
    _fixed(model_job)
    _write(model_job, "src/more.py", "X = 1\n")
    two = bundle_of(model_job, BRANCH, base, tmp_path / "two.bundle")
    many = publish(push_job, str(two), "--base", base, "--max-commits", "1")
    assert many.returncode == 1 and f"{BRANCH} has 2 commits; at most 1" in many.stderr
    first = git(model_job, "rev-parse", f"{BRANCH}~1").strip()
    # the job started from `first`, but the bundle's line starts at `base`: not its base
    foreign = publish(push_job, str(two), "--base", first)
    assert foreign.returncode == 1, foreign.stderr
    assert f"the base {first[:10]} is not in this checkout's history" in foreign.stderr
    # the job started from a later commit than the one the bundle's line grows from
    _write(push_job, "README.md", "later\n", "later")
    later = git(push_job, "rev-parse", "HEAD").strip()
    moved = publish(push_job, str(two), "--base", later)
    assert moved.returncode == 1
    assert f"does not follow {later[:10]} alone" in moved.stderr, moved.stderr
    assert branches(origin) == ["refs/heads/main"]


def test_a_merge_in_the_line_is_refused(origin: Path, tmp_path: Path) -> None:
    model_job = clone(origin, tmp_path / "model-job")
    base = git(model_job, "rev-parse", "HEAD").strip()
    git(model_job, "switch", "-qc", "side")
    _write(model_job, "src/side.py", "S = 1\n")
    git(model_job, "switch", "-qc", BRANCH, base)
    _fixed(model_job)
    git(model_job, "merge", "-q", "--no-edit", "side")
    handed = bundle_of(model_job, BRANCH, base, tmp_path / "merge.bundle")
    refused = publish(clone(origin, tmp_path / "push-job"), str(handed), "--base", base)
    assert refused.returncode == 1 and "does not follow" in refused.stderr, refused.stderr
    assert branches(origin) == ["refs/heads/main"]


def test_a_remote_that_is_an_option_runs_nothing(origin: Path, tmp_path: Path) -> None:
    model_job = clone(origin, tmp_path / "model-job")
    base = git(model_job, "rev-parse", "HEAD").strip()
    git(model_job, "switch", "-qc", BRANCH)
    _fixed(model_job)
    handed = bundle_of(model_job, BRANCH, base, tmp_path / "card.bundle")
    touched = tmp_path / "touched"
    hostile = f"--receive-pack=touch {touched}; git-receive-pack"
    proc = publish(
        clone(origin, tmp_path / "push-job"), str(handed), "--base", base, f"--remote={hostile}"
    )
    assert proc.returncode == 2 and "would read it as an option" in proc.stderr
    assert not touched.exists()
    assert branches(origin) == ["refs/heads/main"]


def test_the_title_file_is_one_line_whatever_the_card_says(origin: Path, tmp_path: Path) -> None:
    """A title with a newline (an issue's) must not become a second line of anything."""
    model_job = clone(origin, tmp_path / "model-job")
    base = git(model_job, "rev-parse", "HEAD").strip()
    git(model_job, "switch", "-qc", BRANCH)
    card = (model_job / CARD).read_text()
    hostile = 'title: "Fix\\nbranch=evil\\u0007"'
    _write(model_job, CARD, card.replace("title: Adding two numbers subtracts them", hostile))
    handed = bundle_of(model_job, BRANCH, base, tmp_path / "card.bundle")
    title = tmp_path / "title.txt"
    body = tmp_path / "pr-body.md"
    body.write_text("x" * 70_000)
    proc = publish(
        clone(origin, tmp_path / "push-job"), str(handed), "--base", base,
        "--check-only", "--title-out", str(title), "--pr-body", str(body),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert title.read_text() == "card: Fix branch=evil\n"
    cut = body.read_text()
    assert len(cut) == 60_000 and cut.endswith(
        "(cut: the body had 70000 characters; the run log has it all)\n"
    )


def test_ci_says_it_does_not_isolate_instead_of_turning_it_off_silently(
    tmp_path: Path,
) -> None:
    seed = tmp_path / "seed"
    make_project(seed, top_toml="isolation = true\n")
    bare = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(bare))
    job = clone(bare, tmp_path / "job")
    body = tmp_path / "pr-body.md"
    with FakeMessagesAPI(fix_transcript()) as api:
        run = cli(
            job, "run", CARD, "--ci", "--remote", "origin", "--pr-body", str(body),
            env=api_env(api),
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
    said = "isolation = true is not used on CI: the run works in the job's own checkout"
    assert said in run.stderr
    notes = body.read_text().split("### Notes", 1)
    assert len(notes) == 2 and said in notes[1]


def test_a_review_continues_with_no_github_token_in_the_model_job(
    tmp_path: Path, marker: Path
) -> None:
    """The gate saves the review (`fetch-review`, with the token); the model job continues from
    the file with no GitHub at all; the push job fast-forwards the pull request's branch."""
    seed = tmp_path / "seed"
    make_project(seed)
    origin = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(origin))
    with FakeMessagesAPI(fix_transcript()) as api:
        first = cli(clone(origin, tmp_path / "first"), "run", CARD, "--ci", env=api_env(api))
        assert first.returncode == 0, first.stderr
    head = git(origin, "rev-parse", BRANCH).strip()

    saved = tmp_path / "handover" / "review.json"
    saved.parent.mkdir()
    gate = clone(origin, tmp_path / "gate")
    with serving(pull_request(head, marker)) as github:
        env = {**github.env(), "GITHUB_REPOSITORY": "o/r"}
        fetched = cli(gate, "fetch-review", "7", str(saved), env=env)
        assert fetched.returncode == 0, fetched.stderr
    assert f"saved the review of o/r#7 (2 remark(s)) to {saved}" in fetched.stderr
    assert json.loads(saved.read_text())["head"] == head

    model_job = clone(origin, tmp_path / "model-job")
    git(model_job, "checkout", "-q", "--detach", head)
    outbox = tmp_path / "outbox.git"
    git(tmp_path, "init", "-q", "--bare", str(outbox))
    git(model_job, "push", "-q", str(outbox), f"{head}:refs/heads/{BRANCH}")
    body = saved.parent / "pr-body.md"
    with FakeMessagesAPI(review_transcript()) as api:
        run = cli(
            model_job, "run", CARD, "--ci", "--review-file", str(saved),
            "--remote", str(outbox), "--pr-body", str(body), env=api_env(api),
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        api.assert_complete()
        prompt = json.dumps(next(r.body for r in api.requests if r.index == 0)["messages"])
    assert "Document `add`, please." in prompt.split("THE REVIEW")[1]
    assert git(origin, "rev-parse", BRANCH).strip() == head  # nothing reached origin yet
    handed = bundle_of(model_job, BRANCH, head, saved.parent / "card.bundle")

    push_job = clone(origin, tmp_path / "push-job")
    git(push_job, "checkout", "-q", "--detach", head)
    pushed = publish(push_job, str(handed), "--base", head, "--branch", BRANCH)
    assert pushed.returncode == 0, pushed.stderr
    assert git(origin, "rev-parse", f"{BRANCH}~1").strip() == head
    assert git(origin, "show", f"{BRANCH}:src/calc.py") == DOCUMENTED


def test_a_saved_review_must_be_one(origin: Path, tmp_path: Path) -> None:
    job = clone(origin, tmp_path / "job")
    forged = tmp_path / "review.json"
    forged.write_text(json.dumps({"repo": "o/r", "number": "7", "branch": BRANCH}))
    proc = cli(job, "run", CARD, "--ci", "--review-file", str(forged))
    assert proc.returncode == 2 and "not a saved review" in proc.stderr
    both = cli(job, "run", CARD, "--ci", "--review-file", str(forged), "--from-review", "7")
    assert both.returncode == 2 and "one of them" in both.stderr
    dash = cli(job, "run", CARD, "--ci", "--remote=--upload-pack=touch x")
    assert dash.returncode == 2 and "would read it as an option" in dash.stderr


def test_a_branch_named_for_another_file_does_not_make_it_the_card(
    origin: Path, tmp_path: Path
) -> None:
    """`cards/<slug of tests/conftest.py>` is shaped like a card's branch, but only a Markdown
    file in the cards folder can be the card: the file stays outside the write area."""
    model_job = clone(origin, tmp_path / "model-job")
    base = git(model_job, "rev-parse", "HEAD").strip()
    forged = f"cards/{slug_of('tests/conftest.py')}"
    git(model_job, "switch", "-qc", forged)
    _outside_area(model_job)
    handed = bundle_of(model_job, forged, base, tmp_path / "card.bundle")
    refused = publish(clone(origin, tmp_path / "push-job"), str(handed), "--base", base)
    assert refused.returncode == 1
    assert "writes tests/conftest.py: outside the write area" in refused.stderr, refused.stderr
    assert branches(origin) == ["refs/heads/main"]
