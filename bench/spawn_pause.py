"""How long does the loop stand still while processes start? On the loop, and off it.

A ticker task on the event loop notes the gap between its turns while git commands run, one
after another, started either as asyncio does it (`asyncio.create_subprocess_exec`, on the
loop: a start blocks until the child has exec'd) or as cardrunner does it now
(`git/process.py`'s `run_git`, started and awaited on a thread). A request to the language
server waits as long as the loop stands still. Arms alternate, each `--commands` git commands;
the ratio is the loop's p99.9 and largest gap, off the loop ÷ on it, pooled over `--rounds`.

    .venv/bin/python bench/spawn_pause.py [--rounds 4] [--commands 40]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

from _common import header, percentile

from cardrunner.git.process import run_git

ARGV = ["git", "--version"]


async def on_the_loop() -> None:
    proc = await asyncio.create_subprocess_exec(*ARGV, stdout=asyncio.subprocess.PIPE)
    await proc.communicate()


async def off_the_loop() -> None:
    await run_git(ARGV, dict(os.environ), None)


async def gaps_while(start: object, commands: int) -> list[float]:
    """The loop's gaps between turns while `commands` git commands run, one after another."""
    stop, gaps = asyncio.Event(), []

    async def ticker() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            await asyncio.sleep(0)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    task = asyncio.create_task(ticker())
    for _ in range(commands):
        await start()  # type: ignore[operator]
    stop.set()
    await task
    return gaps


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--commands", type=int, default=40)
    args = parser.parse_args()
    header(f"the loop's pauses while git starts: on the loop / off it, {args.rounds} rounds")
    pooled: dict[str, list[float]] = {"on": [], "off": []}
    for _ in range(args.rounds):
        for name, start in (("on", on_the_loop), ("off", off_the_loop)):
            pooled[name] += await gaps_while(start, args.commands)
    for name, gaps in pooled.items():
        print(
            f"   {name} the loop: p99.9 {percentile(gaps, 99.9) * 1000:.2f} ms, "
            f"max {max(gaps) * 1000:.2f} ms, {len(gaps)} turns"
        )
    for label, p in (("p99.9", 99.9), ("max", 100.0)):
        ratio = percentile(pooled["off"], p) / percentile(pooled["on"], p)
        print(f"RATIO loop pause {label}, git started off the loop ÷ on it = {ratio:.2f}×")


if __name__ == "__main__":
    asyncio.run(main())
