// The temporary project the end-to-end test works in, and the scripted "model" that changes it.
//
// Why a project of its own: the test must show the whole user path — a card, a failing test, a
// change, a passing test, a review, a commit — on something small enough to read in the
// screenshots. The transcript is what the fake Messages API answers, in order; the model never
// sees a real API.
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";

export const CARD_PATH = "cards/greeting.md";
/** A second card, whose run the e2e cancels while the model "thinks" (the fake API hangs). */
export const CANCEL_CARD_PATH = "cards/farewell.md";
export const CARD_TITLE = "Greeting ends with an exclamation mark";

const CARD = `---
title: ${CARD_TITLE}
state: New
category: Improvement
---
\`greet("Ada")\` returns "Hello Ada". It should greet with a comma and an exclamation mark.

## Acceptance criteria

- \`greet("Ada")\` returns "Hello, Ada!" and the tests pass.
`;

const CANCEL_CARD = `---
title: Say goodbye
state: New
category: Feature
---
Add \`farewell(name)\` next to \`greet\`.

## Acceptance criteria

- \`farewell("Ada")\` returns "Goodbye, Ada!".
`;

const SOURCE_BEFORE = `def greet(name: str) -> str:
    """The greeting shown on the start page."""
    return "Hello " + name
`;

export const SOURCE_AFTER = `def greet(name: str) -> str:
    """The greeting shown on the start page."""
    return f"Hello, {name}!"
`;

const TEST = `import sys
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from greet import greet  # noqa: E402


class GreetTest(unittest.TestCase):
    def test_greets_with_comma_and_exclamation_mark(self) -> None:
        self.assertEqual(greet("Ada"), "Hello, Ada!")

    def test_start_page_greets_everyone(self) -> None:
        time.sleep(8)  # a slower test: the live run view shows the first result meanwhile
        self.assertTrue(all(greet(n).startswith("Hello, ") for n in ("Ada", "Bo")))


if __name__ == "__main__":
    unittest.main()
`;

// Commands run with cardrunner's own interpreter first on PATH, so "python" is that one.
const CONFIG = `model = "claude-sonnet-5-5"
cards = "cards"

[limits]
max_rounds = 12

[paths]
read = ["."]
write = ["src", "tests"]

[commands]
build = ["python", "-m", "compileall", "-q", "src"]
test = ["python", "-m", "unittest", "discover", "-s", "tests", "-v"]
`;

/** A remark typed under a line of the review's .diff (it must reach the model too). */
export const LINE_COMMENT = "keep the docstring saying where the greeting is shown";

/** The reason the e2e gives when it rejects the first commit (it must reach the model). */
export const REJECT_REASON = "Say in the commit message what greet() returns now and how it was checked";

/** What the model says in its first round (the run view shows it). */
export const NARRATION = "Let me read the greeting first.";

/** What the fake API answers, one response per model call. */
export function transcript() {
  const call = (name, input, text) => ({
    content: [...(text ? [{ type: "text", text }] : []), { type: "tool_use", name, input }],
    stop_reason: "tool_use",
  });
  return {
    responses: [
      call("read_file", { path: "src/greet.py" }, NARRATION),
      call("write_file", { path: "src/greet.py", content: SOURCE_AFTER }),
      { ...call("run_tests", {}), content: [{ type: "tool_use", id: "toolu_tests", name: "run_tests", input: {} }] },
      // Evidence cites the call it rests on, quoting its result exactly (the runner checks it).
      call("report_criterion", {
        index: 1,
        passed: true,
        evidence: "run_tests: test_greets_with_comma_and_exclamation_mark passed; greet('Ada') == 'Hello, Ada!'",
        cites: [{ call: "toolu_tests", quote: "test_greets_with_comma_and_exclamation_mark" }],
      }),
      // The e2e rejects this first commit with REJECT_REASON; the model then tries again.
      call("git_commit", { message: `card: ${CARD_TITLE}\n\nChange greet().` }),
      call(
        "git_commit",
        { message: `card: ${CARD_TITLE}\n\ngreet() now answers "Hello, <name>!"; test_greet checks it.` },
        "The reviewer wants the message to say what changed and how it was checked.",
      ),
      {
        content: [
          { type: "text", text: "The greeting now ends with an exclamation mark; the test passes.\n\nRESULT: done" },
        ],
        stop_reason: "end_turn",
      },
      // The second card's first model call never gets an answer: the e2e cancels that run.
      { fault: { kind: "hang" } },
    ],
  };
}

function write(root, rel, text) {
  const file = path.join(root, rel);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
}

function git(root, ...args) {
  return execFileSync("git", ["-C", root, ...args], { encoding: "utf-8" }).trim();
}

/** Create the project (a git repository with one commit). */
export function createWorkspace(root) {
  write(root, CARD_PATH, CARD);
  write(root, CANCEL_CARD_PATH, CANCEL_CARD);
  write(root, "src/greet.py", SOURCE_BEFORE);
  write(root, "tests/test_greet.py", TEST);
  write(root, "cardrunner.toml", CONFIG);
  write(root, ".gitignore", ".cardrunner/\n__pycache__/\n");
  git(root, "init", "-q", "-b", "main");
  git(root, "config", "user.name", "cardrunner e2e");
  git(root, "config", "user.email", "e2e@cardrunner.invalid");
  git(root, "config", "commit.gpgsign", "false");
  git(root, "add", "-A");
  git(root, "commit", "-q", "-m", "A tiny project with one card");
}

/** Commits, newest first: [{sha, subject}]. */
export function commits(root) {
  return git(root, "log", "--format=%H%x09%s")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => {
      const [sha, subject] = line.split("\t");
      return { sha, subject };
    });
}

export function gitShow(root, rev, file) {
  return git(root, "show", `${rev}:${file}`);
}

/** The full message of a commit. */
export function commitMessage(root, rev) {
  return git(root, "log", "-1", "--format=%B", rev);
}

/** The files a commit touched. */
export function changedFiles(root, rev) {
  return git(root, "show", "--name-only", "--format=", rev)
    .split("\n")
    .filter((f) => f !== "");
}
