"""No credential reaches the model, the log or the pushed commit: `run --ci` in a checkout that
holds the job's token the way `actions/checkout` leaves it.

The attacker here is the model (or whoever steers it): its tool calls read `~/.aws/credentials`
and `/proc/self/environ` after the repository widened `paths.read` to `/`, its test command
prints `.git/config`, `git config --list`, the credential store and `$GITHUB_TOKEN`, and its
commit message repeats the token. The run is the real CLI with the real SDK against the fake
Messages API, which records every request; the branch is pushed to a bare `origin`.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from cardrunner.testing.fake_api import FakeMessagesAPI
from tests.support.project import (
    FIXED,
    cli,
    final,
    git,
    make_project,
    report,
    slug_of,
    turn,
    use,
)

BRANCH = f"cards/{slug_of('cards/fix-add.md')}"
CHECKOUT_TOKEN = "ghs_Q7xK2mP9vR4tL8nW3yB6cD1fH5jZ0aE2sU4q"
"""The job's token as `actions/checkout` persists it (not in the environment)."""
HEADER = base64.b64encode(f"x-access-token:{CHECKOUT_TOKEN}".encode()).decode()
JOB_TOKEN = "ghs_N3vB8cX1zL5kJ9hG2fD6sA4pO7iU0yT3rE8w"
"""`GITHUB_TOKEN` in the environment of the step that runs cardrunner."""
URL_TOKEN = "plain-password-in-url-1234"
"""A clone URL's password: no known shape, only known because the config held it."""
STORE_TOKEN = "gho_W4eR7tY1uI9oP3aS6dF2gH8jK5lZ0xC3vB7n"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
SECRETS = (CHECKOUT_TOKEN, HEADER, JOB_TOKEN, URL_TOKEN, STORE_TOKEN, AWS_SECRET)

LEAK = (
    "{ cat .git/config; git config --list --show-origin; cat ~/.git-credentials; "
    "cat ~/.aws/credentials; echo GITHUB_TOKEN=$GITHUB_TOKEN; git log -1 --format=head=%H; "
    "} > seen.txt 2>&1; cat seen.txt; python -m pytest -q -p no:cacheprovider tests"
)


def model_tries(home: Path) -> list[dict[str, Any]]:
    """Every way the model could reach a credential, then an honest fix and a commit whose
    message repeats the tokens (as a model that had seen them would)."""
    return [
        turn(
            use("read_file", "toolu_aws", path=str(home / ".aws" / "credentials")),
            use("read_file", "toolu_store", path=str(home / ".git-credentials")),
            use("read_file", "toolu_environ", path="/proc/self/environ"),
            use("read_file", "toolu_config", path=".git/config"),
            use("list_files", "toolu_home", path=str(home)),
        ),
        turn(use("write_file", path="src/calc.py", content=FIXED)),
        turn(use("build_app", "toolu_build"), use("run_tests", "toolu_tests")),
        turn(
            report(1, "add(2, 3) is 5 in the test", ("toolu_tests", "1 passed")),
            report(2, "1 passed", ("toolu_tests", "1 passed")),
        ),
        turn(
            use(
                "git_commit",
                message=(
                    "card: Adding two numbers subtracts them\n\nUse +. Token "
                    f"{CHECKOUT_TOKEN}, header AUTHORIZATION: basic {HEADER}, job {JOB_TOKEN}, "
                    f"url https://x-access-token:{URL_TOKEN}@github.com/o/r"
                ),
            )
        ),
        final(),
    ]


@pytest.fixture
def job(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(the job's checkout, its bare origin, the job's home) with the token where a real job
    has it: the extraheader, a remote URL, a credential store, the cloud CLI's file."""
    seed = tmp_path / "seed"
    make_project(seed)
    toml = seed / "cardrunner.toml"
    text = toml.read_text().replace('read = ["."]', 'read = [".", "/"]')
    test_line = next(line for line in text.splitlines() if line.startswith("test = "))
    toml.write_text(text.replace(test_line, f"test = {json.dumps(['sh', '-c', LEAK])}"))
    (seed / ".gitignore").write_text("__pycache__/\nseen.txt\n")
    git(seed, "commit", "-qam", "leaky tests, wide reads")
    origin = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(origin))
    checkout = tmp_path / "job"
    git(tmp_path, "clone", "-q", str(origin), str(checkout))
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text(
        f"[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = {AWS_SECRET}\n"
    )
    (home / ".git-credentials").write_text(f"https://x-access-token:{STORE_TOKEN}@github.com\n")
    for key, value in {
        "user.email": "ci@example.com",
        "user.name": "CI",
        "http.https://github.com/.extraheader": f"AUTHORIZATION: basic {HEADER}",
        "credential.helper": f"store --file {home / '.git-credentials'}",
        "remote.upstream.url": f"https://x-access-token:{URL_TOKEN}@github.com/o/r.git",
    }.items():
        git(checkout, "config", key, value)
    return checkout, origin, home


def sent_to_model(api: FakeMessagesAPI) -> str:
    """Everything cardrunner itself put into the requests: the system prompt, the tools and
    every user turn (tool results, the card). The model's own turns are its script here."""
    parts: list[Any] = []
    for request in api.requests:
        if request.body is None:
            continue
        parts += [request.body.get("system"), request.body.get("tools")]
        parts += [m["content"] for m in request.body["messages"] if m["role"] == "user"]
    return json.dumps(parts)


def tool_result(api: FakeMessagesAPI, call: str) -> dict[str, Any]:
    """The result cardrunner sent back for the tool call `call`."""
    for request in api.requests:
        for message in (request.body or {}).get("messages", []):
            for block in message["content"] if isinstance(message["content"], list) else []:
                if block.get("type") == "tool_result" and block["tool_use_id"] == call:
                    return dict(block)
    raise AssertionError(f"no result for {call}")


def test_no_token_reaches_the_model_the_log_the_output_or_the_pushed_commit(
    job: tuple[Path, Path, Path],
) -> None:
    checkout, origin, home = job
    with FakeMessagesAPI(model_tries(home)) as api:
        env = {
            "ANTHROPIC_BASE_URL": api.base_url,
            "ANTHROPIC_API_KEY": "sk-test-ci",
            "GITHUB_TOKEN": JOB_TOKEN,
            "HOME": str(home),
        }
        done = cli(checkout, "run", "cards/fix-add.md", "--ci", env=env)
        assert done.returncode == 0, done.stderr
        api.assert_complete()

    # the commands saw a config without credentials, and git still worked with it
    seen = (checkout / "seen.txt").read_text()
    head = git(checkout, "rev-parse", "HEAD").strip()
    assert f"head={head}" in seen, seen
    assert "remote.upstream.url=https://github.com/o/r.git" in seen, seen
    assert "extraheader" not in seen and "credential.helper" not in seen, seen
    assert "GITHUB_TOKEN=\n" in seen, seen
    for secret in SECRETS:
        assert secret not in seen, (secret, seen)

    # the file tools refused the secret stores although paths.read is "/"
    for call in ("toolu_aws", "toolu_store", "toolu_environ", "toolu_config"):
        refused = tool_result(api, call)
        assert refused.get("is_error") is True, refused
    assert "secret" in json.dumps(tool_result(api, "toolu_aws"))
    listing = json.dumps(tool_result(api, "toolu_home"))
    assert ".aws" not in listing and ".git-credentials" not in listing, listing

    # nothing cardrunner sent, logged, printed or pushed holds a token
    log = "".join(p.read_text() for p in (checkout / ".cardrunner" / "runs").glob("*.jsonl"))
    pushed = git(origin, "log", "--format=%B", f"main..{BRANCH}")
    files = git(origin, "grep", "-I", "-h", "-e", ".", BRANCH, "--")
    assert "[redacted]" in pushed and "card: Adding two numbers" in pushed, pushed
    for where, text in [
        ("request", sent_to_model(api)),
        ("log", log),
        ("commit", pushed),
        ("files", files),
        ("output", done.stdout + done.stderr),
    ]:
        for secret in SECRETS:
            assert secret not in text, (where, secret)
