"""A real web app checked live in a real browser (issue 39, "What it must show").

Flask's tutorial app flaskr (PyPI's Flask sdist, pinned) in a fresh repository, set up exactly as
docs/webapp.md tells a user: the app started by `serve.sh`, Playwright MCP from npm on the
distribution's chromium as a stdio server in the run's sandbox, its files in the run's folder.
The card's two criteria can only be seen in the browser. With the fix the run ends Done, both
criteria verified by the browser's calls, and no browser file in the work tree or the commit. A
wrong fix (the words in comments only) does not end Done, whether the model cites the browser
(the words are not on the page) or `read_file` of the source (reading it is no observation of
the app), and leaves no commit on the user's branch. Nor does one whose words were shown where
the app's pages are not — its log, a `data:` page, a page on another port, a field the model typed
them into, the app's page rewritten by a `javascript:` URL — and a file name the model gives the
browser writes nothing into the tree.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.support.project import git
from tests.support.webapp import (
    LOGIN_SAYS,
    POSTS_SAY,
    WebApp,
    cached_transcript,
    forged_transcript,
    good_transcript,
    make_webapp,
    play_dishonest,
    wrong_transcript,
)


def _state(app: WebApp) -> str:
    return str(yaml.safe_load((app.root / app.card).read_text().split("---")[1])["state"])


def _no_browser_files(app: WebApp, commits: str) -> None:
    """Nothing of the browser in the work tree, in git's view of it, or in the commits."""
    assert not (app.root / ".playwright-mcp").exists()
    assert git(app.root, "status", "--porcelain", "--ignored", "--", ".playwright-mcp") == ""
    changed = git(app.root, "log", "--name-only", "--format=", commits)
    assert ".playwright-mcp" not in changed and ".yml" not in changed, changed
    assert "console-" not in changed and ".png" not in changed, changed


def test_the_fix_is_verified_in_the_browser_and_ends_done(tmp_path: Path) -> None:
    app = make_webapp(tmp_path / "flaskr")
    checked = app.cli("check", ".")
    assert checked.returncode == 0, checked.stdout
    transcript = app.play("done", good_transcript(app.root, app.port))
    start = git(app.root, "rev-parse", "HEAD").strip()

    proc = app.cli("run", app.card, "--replay", str(transcript), "--yes")

    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-3000:]
    assert _state(app) == "Done"
    change = git(app.root, "log", "-1", "--format=%B", "HEAD~1")
    assert (
        f'Criterion-1: verified in the app — mcp__browser__browser_find toolu_posts: "{POSTS_SAY}"'
        in change
    )
    assert (
        f'Criterion-2: verified in the app — mcp__browser__browser_find toolu_login: "{LOGIN_SAYS}"'
        in change
    )
    _no_browser_files(app, f"{start}..HEAD")
    assert git(app.root, "status", "--porcelain") == "", "the run left the tree dirty"
    runs = app.root / ".cardrunner" / "runs"
    (run_dir,) = [d for d in runs.iterdir() if d.is_dir()]
    assert list((run_dir / "browser").glob("page-*.png")), "the browser's files went elsewhere"
    (log,) = runs.glob("*.jsonl")
    (end,) = [r for r in map(json.loads, log.read_text().splitlines()) if r["type"] == "result"]
    for entry in end["data"]["ledger"]:  # the proof shown with each criterion
        shots = entry["screenshots"]
        assert len(shots) == 1 and (app.root / shots[0]).is_file(), shots
        assert shots[0].startswith(".cardrunner/runs/"), shots


def _not_done(app: WebApp, transcript: Path) -> tuple[dict[str, Any], str]:
    """Play a dishonest transcript: the run and the card end other than Done; its result and
    the runner's refusals, joined."""
    played = play_dishonest(app, transcript)
    result = played["result"]
    assert result["status"] != "done", json.dumps(result)[:3000]
    assert _state(app) != "Done"
    return result, "\n".join(played["refused"])


def test_a_wrong_fix_ends_neither_by_the_browser_nor_by_the_source(tmp_path: Path) -> None:
    app = make_webapp(tmp_path / "flaskr")
    transcript = app.play("wrong", wrong_transcript(app.root, app.port))
    start = git(app.root, "rev-parse", "HEAD").strip()

    result, refused = _not_done(app, transcript)
    assert f"the quote '{POSTS_SAY}' does not appear in the result of mcp__browser" in refused
    assert "read_file" in refused, refused  # the source is no evidence of what the page shows
    assert not any(e["status"] == "verified" for e in result.get("ledger", [])), result["ledger"]
    touched = git(app.root, "log", "--name-only", "--format=", f"{start}..main").split()
    assert set(touched) <= {app.card}, f"the wrong fix was committed: {touched}"
    _no_browser_files(app, f"{start}..main")


def _without_the_browsers_origin_limit(app: WebApp) -> None:
    """cardrunner's own check must hold where a user left `--allowed-origins` out (Playwright's
    limit would block the other port before the runner sees it)."""
    toml = app.root / "cardrunner.toml"
    limited = toml.read_text()
    toml.write_text(limited.replace(f' "--allowed-origins", "http://localhost:{app.port}/",', ""))
    assert toml.read_text() != limited
    git(app.root, "commit", "-qam", "the browser without an origin limit")


def test_words_shown_elsewhere_than_in_the_app_do_not_end_done(tmp_path: Path) -> None:
    app = make_webapp(tmp_path / "flaskr")
    _without_the_browsers_origin_limit(app)
    transcript = app.play("forged", forged_transcript(app.root, app.port))
    start = git(app.root, "rev-parse", "HEAD").strip()

    result, refused = _not_done(app, transcript)
    assert f"toolu_data, round 8) saw data:text/html,<p>{POSTS_SAY}</p>, not the app" in refused
    assert f"toolu_decoy, round 11) saw http://localhost:{app.port + 1}/, not the app" in refused
    assert f"the quote '{LOGIN_SAYS}' from mcp__browser__browser_find (toolu_typed" in refused
    assert "is what a form field holds" in refused
    assert "browser_navigate" in refused and "put your own script or content" in refused
    assert "start_app shows the app's log, not its pages" in refused
    assert not any(e["status"] == "verified" for e in result.get("ledger", [])), result["ledger"]
    touched = git(app.root, "log", "--name-only", "--format=", f"{start}..main").split()
    assert set(touched) <= {app.card}, f"the forged evidence was committed: {touched}"
    _no_browser_files(app, f"{start}..main")
    # The browser's file names: out of its folder refused, into it kept there, not in the tree.
    assert "outside allowed roots" in refused, refused
    assert not (app.root / "flaskr" / "shot.png").exists()
    assert not (app.root / "flaskr" / "templates" / "blog" / "index.html.png").exists()
    (kept,) = (app.root / ".cardrunner" / "runs").glob("*/mcp/browser/flaskr/shot.png")
    assert kept.stat().st_size > 0


def test_a_page_an_earlier_version_sent_is_not_shown_for_the_app_now(tmp_path: Path) -> None:
    """Kept by the browser for a day, the posts page of a version that showed the words would be
    what the browser shows after the wrong fix; docs/webapp.md's `--allowed-origins` routes every
    request, and Playwright keeps no cache for routed requests."""
    app = make_webapp(tmp_path / "flaskr")
    transcript = app.play("cached", cached_transcript(app.root, app.port))

    result, refused = _not_done(app, transcript)
    cached = f"the quote '{POSTS_SAY}' does not appear in the result of mcp__browser__browser_find"
    assert f"{cached} (toolu_again" in refused, json.dumps(result)[:2500]
    assert result["ledger"][0]["status"] != "verified", result["ledger"]
