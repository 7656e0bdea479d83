"""A budget-stopped card offers more budget; hover shows the evidence; overlapping runs warn."""

from __future__ import annotations

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.support.lsp import (
    ACCEPT,
    GOOD_APP,
    command,
    diag_codes,
    editor_of,
    final,
    front_matter,
    lens_command,
    lens_titles,
    project_of,
    report,
    tool,
    turn,
    verify_greeting,
    wait_for,
)


def looking_around(rounds: int) -> list[dict[str, object]]:
    paths = ["src", ".", "cards"]
    return [turn(tool("list_files", path=paths[i % 3])) for i in range(rounds)]


async def test_a_card_stopped_at_max_rounds_offers_twenty_more(client: LanguageClient) -> None:
    project, editor = project_of(client), editor_of(client)
    card = project.write_card("long")
    report = turn(
        tool("write_file", path="src/app.py", content=GOOD_APP),
        *verify_greeting(),
        tool("git_commit", message="card: long\n\nSay hello with the name."),
    )
    project.transcript("long", [*looking_around(12), report, final()])
    editor.answers = [ACCEPT]  # the resumed run commits after review
    uri = editor.open(card)
    await command(client, "cardrunner.runCard", uri)
    await wait_for(
        lambda: (editor.last_status(uri) or {}).get("reason") == "max_rounds",
        what="the budget stop",
    )
    grant = await lens_command(client, uri, "Grant +20 rounds")
    assert list(grant.arguments or []) == [uri, {"grantRounds": 20}]
    await command(client, grant.command, *(grant.arguments or []))
    await wait_for(
        lambda: (editor.last_status(uri) or {}).get("state") == "done", what="the resumed run"
    )
    assert editor.last_status(uri)["round"] == 14  # type: ignore[index]
    assert front_matter(editor.text(uri))["state"] == "Done"
    assert "▶ Run card" in await lens_titles(client, uri)


async def test_hover_shows_the_state_and_the_evidence(client: LanguageClient) -> None:
    project, editor = project_of(client), editor_of(client)
    card = project.write_card("hover", title="Friendly greeting")
    project.transcript(
        "hover",
        [
            turn(
                tool("read_file", "toolu_read", path="src/app.py"),
                report(1, "greet() says hello", "toolu_read", "def greet(name)"),
            ),
            turn(tool("report_criterion", index=2, passed=False, evidence="the name is missing")),
            final("RESULT: failed: the name is missing"),
        ],
    )
    uri = editor.open(card)
    await command(client, "cardrunner.runCard", uri)
    await wait_for(lambda: (editor.last_status(uri) or {}).get("state") == "failed", what="the run")

    async def hover_at(line: int) -> str:
        result = await client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line, 3),
            )
        )
        return "" if result is None else str(result.contents.value)  # type: ignore[union-attr]

    text = editor.text(uri).splitlines()
    title = next(i for i, line in enumerate(text) if line.startswith("title:"))
    first = next(i for i, line in enumerate(text) if line.startswith("- The greeting says hello"))
    assert "Friendly greeting" in await hover_at(title) and "model_failed" in await hover_at(title)
    assert "verified" in await hover_at(first) and "greet() says hello" in await hover_at(first)
    assert "failed" in await hover_at(first + 1) and "the name is missing" in await hover_at(
        first + 1
    )
    assert await hover_at(0) == ""


async def test_a_failed_build_says_why_in_the_hover_and_the_diagnostic(
    client: LanguageClient,
) -> None:
    project, editor = project_of(client), editor_of(client)
    card = project.write_card("broken", title="Broken greeting")
    project.transcript(
        "broken",
        [
            turn(tool("write_file", path="src/app.py", content="def greet(:\n")),
            turn(tool("build_app")),
            final("RESULT: failed: the build fails"),
        ],
    )
    uri = editor.open(card)
    await command(client, "cardrunner.runCard", uri)
    await wait_for(lambda: "result" in diag_codes(client, uri), what="the run's result")
    result = diag_codes(client, uri)["result"].message
    assert "*** Error compiling 'src/app.py'" in result and "SyntaxError: invalid syntax" in result
    title = next(
        i for i, line in enumerate(editor.text(uri).splitlines()) if line.startswith("title:")
    )
    hover = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri=uri), types.Position(title, 3))
    )
    assert hover is not None and "SyntaxError: invalid syntax" in str(hover.contents.value)  # type: ignore[union-attr]


async def test_a_second_card_changing_the_same_file_is_warned_about(client: LanguageClient) -> None:
    project, editor = project_of(client), editor_of(client)
    for name in ("one", "two"):
        project.write_card(name, title=f"Card {name}")
        project.transcript(
            name,
            [
                turn(tool("write_file", path="src/app.py", content=f"# {name}\n")),
                turn(tool("run_tests")),  # sleeps until cancelled
                final("RESULT: failed: cancelled"),
            ],
        )
    one, two = editor.open(project.card("one")), editor.open(project.card("two"))
    await command(client, "cardrunner.runCard", one)
    await wait_for(
        lambda: (editor.last_status(one) or {}).get("tool") == "run_tests", what="card one's tests"
    )
    await command(client, "cardrunner.runCard", two)
    await wait_for(
        lambda: [m for m in client.messages if "both changed src/app.py" in m.message],
        what="the overlap warning",
    )
    assert any(
        "Card one is still running and has changed src/app.py" in m.message for m in client.messages
    )
    for uri in (one, two):
        answer = await command(client, "cardrunner.cancelRun", uri)
        assert answer == {"uri": uri, "cancelled": True}, answer
    await wait_for(
        lambda: all((editor.last_status(u) or {}).get("state") == "failed" for u in (one, two)),
        what="both cancelled",
    )
