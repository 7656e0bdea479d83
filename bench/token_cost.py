"""Token cost of a card: our loop against the plain loop of the reference articles.

Both loops play the same transcript against their own strict fake Messages API (which simulates
the prompt cache: prefixes up to each breakpoint, a 512-token minimum, reads and writes in
`usage`), each in a fresh copy of the workspace, executing the same tools. Billed-input-equivalent
tokens = input + 0.1 × cache_read + 1.25 × cache_write, summed over the rounds. The model's
decisions are the transcript's, and the script asserts that both loops made the same tool calls.

Transcripts: `server/cardrunner/demo/transcripts/*.json` on the demo workspace; when there are
none yet, the tiny project of `tests/support/project.py` with its `fix_transcript()`.

    .venv/bin/python bench/token_cost.py
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import ROOT, header, verdict

TARGET = 0.2
TRANSCRIPTS = ROOT / "server" / "cardrunner" / "demo" / "transcripts"


@dataclass
class Case:
    name: str
    steps: list[dict[str, Any]]
    make: Any  # (dest: Path) -> card path


@dataclass
class Tally:
    rounds: list[dict[str, int]] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)

    def billed(self, upto: int | None = None) -> float:
        return sum(billed(u) for u in self.rounds[:upto])


def billed(usage: dict[str, int]) -> float:
    return (
        usage["input_tokens"]
        + 0.1 * usage.get("cache_read_input_tokens", 0)
        + 1.25 * usage.get("cache_creation_input_tokens", 0)
    )


def cases() -> list[Case]:
    files = sorted(TRANSCRIPTS.glob("*.json")) if TRANSCRIPTS.is_dir() else []
    if files:
        from cardrunner.demo import CARDS, create_workspace
        from cardrunner.testing.fake_script import load_transcript

        out = []
        for f in files:
            data = json.loads(f.read_text(encoding="utf-8"))
            card = data.get("card") if isinstance(data, dict) else None
            card = card or next((c for c in CARDS if Path(c).stem == f.stem), None)
            if card is None:
                raise SystemExit(f"{f}: no card named {f.stem}.md in the demo and no 'card' key")

            def make(dest: Path, card: str = str(card)) -> Path:
                create_workspace(dest)
                return dest / card

            out.append(Case(f.stem, [dict(s) for s in load_transcript(f)], make))  # type: ignore[arg-type]
        return out
    from tests.support.project import fix_transcript, make_project

    print("   (no demo transcripts yet: using tests/support/project.py's fix_transcript)")
    return [Case("tiny-project fix-add", fix_transcript(), make_project)]


def client(base_url: str) -> Any:
    import anthropic

    return anthropic.AsyncAnthropic(base_url=base_url, api_key="sk-bench")


def _key(name: str, arguments: Any) -> str:
    return f"{name}{json.dumps(arguments, sort_keys=True)}"


async def ours(case: Case, dest: Path) -> Tally:
    from cardrunner.agent.events import RunFinished, ToolStarted
    from cardrunner.agent.review import AutoApprover
    from cardrunner.config.loading import load_settings
    from cardrunner.models.anthropic import AnthropicModel
    from cardrunner.run.options import RunOptions
    from cardrunner.run.session import run_card
    from cardrunner.testing.fake_api import FakeMessagesAPI

    card = case.make(dest)
    settings, _ = load_settings(dest)
    tally = Tally()
    async with FakeMessagesAPI(case.steps) as api:
        model = AnthropicModel(settings.model, settings.options, client=client(api.base_url))
        options = RunOptions(
            root=dest, card_path=card, settings=settings, model=model, approver=AutoApprover()
        )
        async for event in run_card(options):
            if isinstance(event, ToolStarted):
                tally.calls.append(_key(event.name, event.arguments))
            elif isinstance(event, RunFinished):
                print(f"   ours  {case.name}: {event.status} {event.reason or ''}".rstrip())
        api.assert_complete()
        tally.rounds = [r["usage"] for r in api.responses]
    return tally


async def plain(case: Case, dest: Path) -> Tally:
    """The loop as the articles write it; the tools are the runner's own `ToolPool`."""
    from cardrunner.agent.review import AutoApprover
    from cardrunner.agent.toolpool import ToolContext
    from cardrunner.config.loading import load_settings
    from cardrunner.models.scripted import ScriptedModel
    from cardrunner.run.assembly import open_run
    from cardrunner.run.options import RunOptions
    from cardrunner.run.prepare import prepare_run
    from cardrunner.testing.fake_api import FakeMessagesAPI

    card = case.make(dest)
    settings, _ = load_settings(dest)
    tally = Tally()
    async with FakeMessagesAPI(case.steps) as api, AsyncExitStack() as stack:
        # The runner's own assembly (files, commands, evidence, commit, MCP) gives the same tools.
        unused = ScriptedModel([], name=settings.model)  # the plain loop calls the SDK itself
        options = RunOptions(
            root=dest, card_path=card, settings=settings, model=unused, approver=AutoApprover()
        )
        run = await open_run(await prepare_run(options), stack)
        pool, system = run.loop.pool, run.loop.system
        tools, prompt = pool.specs(), run.loop.messages[0].content[0]["text"]
        sdk = client(api.base_url)
        # ---- the plain loop: no cache_control, no trimming, no compaction ----
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        rounds = 0
        while True:
            response = await sdk.messages.create(
                model=settings.model,
                max_tokens=16_000,  # non-streaming: the SDK refuses much more
                system=system,
                tools=tools,
                messages=messages,
                thinking={"type": "adaptive"},
            )
            rounds += 1
            if response.stop_reason != "tool_use":
                break
            messages.append({"role": "assistant", "content": response.content})
            results = []
            for block in response.content:
                if block.type != "tool_use":
                    continue
                tally.calls.append(_key(block.name, block.input))
                result = await pool.execute(block.name, block.input, ToolContext(rounds, _drop))
                results.append(
                    {"type": "tool_result", "tool_use_id": block.id, "content": result.text}
                    | ({"is_error": True} if result.is_error else {})
                )
            messages.append({"role": "user", "content": results})
        # ---- end of the plain loop ----
        print(f"   plain {case.name}: {rounds} rounds")
        api.assert_complete()
        tally.rounds = [r["usage"] for r in api.responses]
    return tally


def _drop(event: object) -> None:
    """The plain loop shows nothing while a tool runs."""


def report(name: str, a: Tally, b: Tally) -> None:
    print(
        f"   {name:<34} rounds {len(a.rounds):>3}   ours {a.billed():>10,.0f}   "
        f"plain {b.billed():>10,.0f}   ours/plain {a.billed() / b.billed():.3f}×"
    )


def explain(pairs: list[tuple[Case, Tally, Tally]]) -> None:
    """Why the ratio is what it is: the first round can read nothing, later rounds mostly read."""
    for case, a, b in pairs:
        first = billed(a.rounds[0])
        rest_a, rest_b = a.billed() - first, b.billed() - billed(b.rounds[0])
        print(
            f"   {case.name}: round 1 (nothing cached yet, written at 1.25×) is "
            f"{first / a.billed():.0%} of ours; rounds 2+ alone: ours/plain "
            f"{rest_a / rest_b:.3f}×"
        )
        per_round = [
            f"{billed(x) / billed(y):.2f}" for x, y in zip(a.rounds, b.rounds, strict=True)
        ]
        print(f"     per-round ours/plain: {' '.join(per_round)}")
        lasts = a.rounds[-1]
        print(
            f"     last round: input {lasts['input_tokens']:,}, cache_read "
            f"{lasts.get('cache_read_input_tokens', 0):,}, cache_write "
            f"{lasts.get('cache_creation_input_tokens', 0):,}"
        )
    rounds = sum(len(a.rounds) for _, a, _ in pairs) / len(pairs)
    print(
        f"   With {rounds:.0f} rounds a card on average, the fixed first-round write weighs "
        "heavily; the ratio falls towards 0.1× as runs get longer."
    )


async def main() -> int:
    os.environ.setdefault("CARDRUNNER_TRUST", "1")  # the bench's own copies of the demo
    header("token cost: our loop vs the plain loop (billed-input-equivalent tokens)")
    pairs: list[tuple[Case, Tally, Tally]] = []
    with tempfile.TemporaryDirectory(prefix="bench-tokens-") as tmp:
        for i, case in enumerate(cases()):
            a = await ours(case, Path(tmp) / f"ours-{i}")
            b = await plain(case, Path(tmp) / f"plain-{i}")
            if a.calls != b.calls:
                print(
                    f"   DIFFERENT TOOL CALLS for {case.name}:\n   ours  {a.calls}\n   plain {b.calls}"
                )
                return 2
            pairs.append((case, a, b))
    print("   same tool calls in both loops: yes")
    for case, a, b in pairs:
        report(case.name, a, b)
    total_a = sum(a.billed() for _, a, _ in pairs)
    total_b = sum(b.billed() for _, _, b in pairs)
    ratio = total_a / total_b
    print(f"   {'TOTAL':<34} {'':>10} ours {total_a:>10,.0f}   plain {total_b:>10,.0f}")
    print(f"RATIO ours/plain = {ratio:.3f}×  (target ≤ {TARGET}×): {verdict(ratio, TARGET)}")
    if ratio > TARGET:
        explain(pairs)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
