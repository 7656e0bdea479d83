"""A fake Messages API in its own process that serves many conversations at once.

`editor_latency.py --model api` points the language server's runs at it (the SDK, HTTP and
streaming for real), so the strict request checks happen in this process — where a real API's
would — and not on the language server's event loop, as they do with the `replay` setting.
Every conversation gets the same instant transcript; which step to answer is read from the
number of assistant turns in the request.

    python bench/_fake_api_server.py --rounds 200    # prints "READY <base_url>", serves until
                                                     # stdin closes, then "VIOLATIONS <n>"
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from _board import instant_transcript

from cardrunner.testing.fake_api import FakeMessagesAPI


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    steps = instant_transcript(args.rounds)["responses"]

    def respond(body: dict[str, Any], index: int) -> dict[str, Any]:
        turns = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return dict(steps[min(turns, len(steps) - 1)])

    async with FakeMessagesAPI(respond) as api:
        print(f"READY {api.base_url}", flush=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)
        print(f"VIOLATIONS {len(api.violations)}", flush=True)
        for violation in api.violations[:5]:
            print(f"  {violation[:300]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
